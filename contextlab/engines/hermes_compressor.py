"""``hermes.compressor``: the real Hermes ``ContextCompressor``, replayed inside contextlab.

When a Hermes Agent package is importable (``pip install 'contextlab[hermes]'``), this engine is
the host's own ``agent.context_compressor.ContextCompressor`` with these changes only:

* its summary LLM call (the module's ``call_llm``) is answered by a contextlab summarizer
  (``extractive`` by default, offline and deterministic; ``llm`` or any ``Summarizer`` object), so a
  replay needs no network and no credentials;
* ``name`` is ``"hermes.compressor"``, so traces and reports tell it apart from contextlab's port;
* an aborted ``compress`` returns its input, as the host's compaction wrapper does with the
  compressor's result then; the summarizer is told the window's first index and whether the focus
  is the caller's or the host's automatic one (seam bookkeeping, no rule changes).

The window is passed as the compressor's ``config_context_length``, which keeps its model-metadata
lookup offline. Every other rule, text and threshold is the installed package's, which is what
``benchmarks/hermes_differential.py`` compares the port against.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

from contextlab.errors import EngineError

ENGINE_NAME = "hermes.compressor"
DESCRIPTION = "the real Hermes ContextCompressor (from an installed hermes-agent), summaries by contextlab"
INSTALL_HINT = "pip install 'contextlab[hermes]'"

_route = threading.local()
"""Per thread: the engine whose ``_generate_summary`` is running, and its turns (set around the call)."""
_lock = threading.Lock()
_engine_class: type | None = None


def hermes_compressor_class() -> type:
    """The engine class (built once), a subclass of the installed package's ``ContextCompressor``.

    Raises:
        EngineError: No Hermes Agent package is importable (contextlab's ``agent`` stand-in has no
            compressor).
    """
    global _engine_class
    with _lock:
        if _engine_class is None:
            module = _compressor_module()
            _engine_class = _build_class(module)
            _route_llm_calls(module)
        return _engine_class


def _compressor_module() -> types.ModuleType:
    try:
        module = importlib.import_module("agent.context_compressor")
    except Exception as error:  # not installed, or a broken install: one line either way
        raise EngineError(
            f"engine {ENGINE_NAME!r} needs a Hermes Agent package ({INSTALL_HINT}): "
            f"importing agent.context_compressor failed: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(getattr(module, "ContextCompressor", None), type):
        raise EngineError(f"engine {ENGINE_NAME!r}: agent.context_compressor has no ContextCompressor class")
    return module


def _build_class(module: types.ModuleType) -> type:
    base: Any = module.ContextCompressor  # the installed package's class (untyped to us)

    def __init__(
        self: Any,
        model: str = "gpt-4o",
        context_length: int = 200_000,
        summarizer: Any = "extractive",
        summarizer_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        from contextlab.engines.compressor.engine import make_summarizer

        kwargs.setdefault("quiet_mode", True)
        base.__init__(self, model=model, config_context_length=int(context_length), **kwargs)
        self.contextlab_summarizer = make_summarizer(summarizer, summarizer_options)

    def compress(self: Any, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        # Remember the caller's explicit focus: without one the host derives an automatic focus and
        # passes it as ``focus_topic``; contextlab's summarizers take that as ``auto_focus``.
        self._contextlab_focus = kwargs.get("focus_topic", args[1] if len(args) > 1 else None)
        self._contextlab_pruned = None
        result = base.compress(self, messages, *args, **kwargs)
        # On an abort the compressor returns its pruned copy, and the host's compaction wrapper keeps
        # the original list (it reads ``_last_compress_aborted``): do the same for contextlab's host.
        return messages if getattr(self, "_last_compress_aborted", False) else result

    def _prune_old_tool_results(self: Any, *args: Any, **kwargs: Any) -> Any:
        # The summarised turns are a slice of this list: it gives the window's first index.
        result = base._prune_old_tool_results(self, *args, **kwargs)
        self._contextlab_pruned = result[0]
        return result

    def _generate_summary(self: Any, turns: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        previous = getattr(_route, "call", None)
        _route.call = (self, turns, args, kwargs)
        try:
            return base._generate_summary(self, turns, *args, **kwargs)
        finally:
            _route.call = previous

    def name(self: Any) -> str:
        return ENGINE_NAME

    return type(
        "HermesCompressor",
        (base,),
        {
            "__doc__": f"{DESCRIPTION}.",
            "__module__": __name__,
            "__init__": __init__,
            "compress": compress,
            "_prune_old_tool_results": _prune_old_tool_results,
            "_generate_summary": _generate_summary,
            "name": property(name),
        },
    )


def _route_llm_calls(module: types.ModuleType) -> None:
    """Answer the compressor module's ``call_llm`` from contextlab while one of our engines is summarizing.

    Other callers (a real host running in the same process) reach the original function.
    """
    original: Callable[..., Any] = getattr(module, "call_llm")  # noqa: B009 - set below, so read it the same way
    if getattr(original, "__contextlab_route__", False):
        return

    def call_llm(*args: Any, **kwargs: Any) -> Any:
        call = getattr(_route, "call", None)
        if call is None:
            return original(*args, **kwargs)
        return _answer(call, kwargs)

    call_llm.__contextlab_route__ = True  # type: ignore[attr-defined]
    setattr(module, "call_llm", call_llm)  # noqa: B010 - the name the compressor's module resolves at call time


def _answer(call: tuple[Any, list[dict[str, Any]], tuple[Any, ...], dict[str, Any]], kwargs: dict[str, Any]) -> Any:
    """A chat-completion-shaped response whose content is the contextlab summarizer's summary."""
    from contextlab.engines.summarizers import HOST_TEMPLATE, SummaryRequest

    engine, turns, args, extra = call
    focus = extra.get("focus_topic", args[0] if args else None)
    memory = extra.get("memory_context", args[1] if len(args) > 1 else "")
    fields = {f.name for f in dataclasses.fields(SummaryRequest)}
    explicit = getattr(engine, "_contextlab_focus", None)
    pruned = getattr(engine, "_contextlab_pruned", None) or []
    first = next((i for i, row in enumerate(pruned) if turns and row is turns[0]), 0)
    values: dict[str, Any] = {
        "turns": turns,
        "budget_tokens": int(engine._compute_summary_budget(turns)),
        "template": HOST_TEMPLATE,
        "previous_summary": getattr(engine, "_previous_summary", None),
        "focus_topic": (focus or None) if explicit else None,
        "auto_focus": None if explicit else (focus or None),
        "memory_context": memory or "",
        "first_index": first,
    }
    messages = kwargs.get("messages") or []
    if "prompt" in fields and messages:
        values["prompt"] = messages[0].get("content", "")  # the exact prompt the host sent, when the seam takes it
    body = engine.contextlab_summarizer.summarize(SummaryRequest(**{k: v for k, v in values.items() if k in fields}))
    message = types.SimpleNamespace(content=body, role="assistant")
    return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message, finish_reason="stop")], usage=None)


def is_available() -> tuple[bool, str | None]:
    """Whether ``hermes.compressor`` can load here, and why not."""
    try:
        hermes_compressor_class()
    except EngineError as error:
        return False, str(error)
    return True, None
