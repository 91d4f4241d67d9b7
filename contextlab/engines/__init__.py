"""The built-in engines, the engine spec type, and the one engine label function.

Built-in engines are registry entries like any plugin's (lazy ``module:attr`` targets, imported only
when used): :func:`contextlab.plugins.resolve_engine` turns a name, a class or an instance into a
fresh engine, resolving every name through the one plugin registry (``docs/architecture.md``). This
package never imports the plugin machinery itself: ``resolve_engine`` and ``known_engine_names`` are
still importable from here for older callers, and load ``contextlab.plugins`` when first used.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from contextlab.engine import ContextEngine, is_engine_class
from contextlab.errors import EngineError
from contextlab.registry import Registry, mapping_of_targets


def _engine_class(obj: Any, name: str) -> type[ContextEngine]:
    """A built-in target is the class, or a function returning it (``hermes.compressor`` builds its own)."""
    cls = obj if isinstance(obj, type) else obj()
    if not is_engine_class(cls):
        raise EngineError(f"built-in engine {name!r}: {cls!r} is not a ContextEngine class")
    return cls  # type: ignore[no-any-return]


BUILTINS: Registry[type[ContextEngine]] = Registry("engine", error=EngineError, convert=_engine_class)
"""Engines shipped inside the package, as lazy ``module:attr`` entries."""
BUILTINS.register("passthrough", target="contextlab.engines.passthrough:PassthroughEngine", source="builtin")
BUILTINS.register("compressor", target="contextlab.engines.compressor:CompressorEngine", source="builtin")
BUILTINS.register(
    "hermes.compressor",
    target="contextlab.engines.hermes_compressor:hermes_compressor_class",
    # Listed without importing the engine (that would import the real host).
    description="the real Hermes ContextCompressor (needs hermes-agent installed), summaries by contextlab",
    source="builtin",
)

BUILTIN_ENGINES: dict[str, str] = mapping_of_targets(BUILTINS)
"""Built-in name → ``module:Class`` (or ``module:function`` returning the class): :data:`BUILTINS` as a table."""

EngineSpec = str | type[ContextEngine] | ContextEngine


def builtin_engine_class(name: str) -> type[ContextEngine]:
    """The class of a built-in engine.

    Raises:
        EngineError: Not a built-in, or it cannot load here (``hermes.compressor`` without a Hermes package).
    """
    return BUILTINS.lookup(name)


def engine_label(spec: EngineSpec) -> str:
    """The engine name a run is labelled with, from its spec alone.

    One function for every run, so a run that failed (even before its engine existed) and one that
    succeeded carry the same label: a name is itself; an instance is its ``name``; a class is its
    ``name`` when that is a plain class attribute, else the ``name`` an instance built without
    arguments reports (built once per class), else the class name (it needs arguments or fails).
    """
    if isinstance(spec, str):
        return spec
    if isinstance(spec, type):
        return _class_label(spec)
    return _reported_name(spec)


_class_labels: dict[type, str] = {}
_labels_lock = threading.Lock()


def _class_label(cls: type) -> str:
    declared = next((base.__dict__["name"] for base in cls.__mro__ if "name" in base.__dict__), None)
    if isinstance(declared, str) and declared:
        return declared
    with _labels_lock:
        known = _class_labels.get(cls)
    if known is not None:
        return known
    try:
        label = _reported_name(cls())
    except Exception:  # needs parameters or cannot start: the class name is the label left
        label = cls.__name__
    with _labels_lock:
        return _class_labels.setdefault(cls, label)


def _reported_name(engine: Any) -> str:
    try:
        return str(engine.name)
    except Exception:
        return type(engine).__name__


def __getattr__(name: str) -> Any:
    # Older import paths of the resolution API, now in contextlab.plugins (loaded on first use, so the
    # engine SDK itself never imports the plugin machinery).
    if name in ("resolve_engine", "known_engine_names"):
        return getattr(importlib.import_module("contextlab.plugins"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
