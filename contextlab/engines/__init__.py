"""Built-in engines and engine resolution (a name, a class, or an instance → a fresh instance)."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any

from contextlab.engine import ContextEngine, clone_engine, is_engine, is_engine_class
from contextlab.errors import EngineError

BUILTIN_ENGINES: dict[str, str] = {
    "passthrough": "contextlab.engines.passthrough:PassthroughEngine",
    "compressor": "contextlab.engines.compressor:CompressorEngine",
    "hermes.compressor": "contextlab.engines.hermes_compressor:hermes_compressor_class",
}
"""Engines shipped inside the package: name → ``module:Class`` (or ``module:function`` returning the
class), imported only when used."""

BUILTIN_DESCRIPTIONS: dict[str, str] = {
    "hermes.compressor": "the real Hermes ContextCompressor (needs hermes-agent installed), summaries by contextlab",
}
"""Descriptions listed without importing the engine (``hermes.compressor`` would import the real host)."""

EngineSpec = str | type[ContextEngine] | ContextEngine


def builtin_engine_class(name: str) -> type[ContextEngine]:
    """The class of a built-in engine.

    Raises:
        EngineError: It cannot load here (``hermes.compressor`` without a Hermes package).
    """
    module_name, _, class_name = BUILTIN_ENGINES[name].partition(":")
    target = getattr(importlib.import_module(module_name), class_name)
    cls = target if isinstance(target, type) else target()
    assert is_engine_class(cls)
    return cls  # type: ignore[no-any-return]


def known_engine_names() -> list[str]:
    """Names :func:`resolve_engine` accepts: built-ins and discovered plugins."""
    names = set(BUILTIN_ENGINES)
    plugins = _plugins_module()
    if plugins is not None:
        names.update(plugins.discovered_names())
    return sorted(names)


def _plugins_module() -> Any:
    """``contextlab.plugins`` when plugin discovery is available (it is imported lazily: it scans folders)."""
    try:
        return importlib.import_module("contextlab.plugins")
    except ModuleNotFoundError:
        return None


def resolve_engine(spec: EngineSpec, params: Mapping[str, Any] | None = None) -> ContextEngine:
    """A fresh engine instance for one run.

    Args:
        spec: A registered name, a ``ContextEngine`` subclass, or an instance (cloned with
            ``clone_for_agent()``, so the caller's object is never touched by the replay).
        params: Constructor keyword arguments (names and classes only).

    Raises:
        EngineError: Unknown name (with suggestions), bad parameters, or a failing constructor.
    """
    params = dict(params or {})
    if is_engine(spec):
        if params:
            raise EngineError("parameters cannot be applied to an engine instance; pass its class instead")
        try:
            cloned: ContextEngine = clone_engine(spec)
        except Exception as error:
            raise EngineError(
                f"engine {_safe_name(spec)!r} could not be copied (clone_for_agent raised "  # type: ignore[arg-type]
                f"{type(error).__name__}: {error})"
            ) from None
        return cloned
    if is_engine_class(spec):
        assert isinstance(spec, type)
        return _construct(spec, params, spec.__name__)
    if isinstance(spec, str):
        if spec in BUILTIN_ENGINES:
            return _construct(builtin_engine_class(spec), params, spec)
        plugins = _plugins_module()
        if plugins is not None and spec in plugins.discovered_names():
            engine: ContextEngine = plugins.load_engine(spec, params)
            return engine
        raise EngineError(_unknown_message(spec))
    raise EngineError(f"cannot use {spec!r} as an engine: expected a name, a ContextEngine subclass or an instance")


def _construct(cls: type[ContextEngine], params: dict[str, Any], label: str) -> ContextEngine:
    try:
        engine = cls(**params)
    except TypeError as error:
        raise EngineError(f"engine {label!r}: bad parameters {sorted(params)}: {error}") from error
    except Exception as error:
        raise EngineError(f"engine {label!r} failed to start: {type(error).__name__}: {error}") from error
    return engine


def _safe_name(engine: ContextEngine) -> str:
    try:
        return str(engine.name)
    except Exception:
        return type(engine).__name__


def _unknown_message(name: str) -> str:
    names = known_engine_names()
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown engine {name!r}{hint} (available: {', '.join(names)})"
