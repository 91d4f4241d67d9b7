"""Running ``compress`` and ``prune_tool_results_only`` as the host does: on a pooled worker thread,
on a private deep snapshot, with a timeout; a timed-out, failed or invalid pass changes nothing."""

from __future__ import annotations

import contextvars
import inspect
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from contextlab.engine import ContextEngine, Message, overrides
from contextlab.messages import clone_messages

POOL_WORKERS = 4
"""The host's compaction pool size; a submission beyond it fails fast."""


@dataclass(frozen=True)
class PassResult:
    """What one engine pass produced.

    ``outcome`` is ``"changed"`` (a new valid list; the host may still refuse it), ``"noop"``
    (the input object came back, or prune returned n == 0), ``"timeout"``, ``"error"`` or ``"invalid"``.
    """

    outcome: str
    messages: list[Message] | None
    n_pruned: int
    duration_ms: float
    reason: str | None = None


def _accepted_kwargs(method: Any) -> set[str] | None:
    """Keyword names ``method`` accepts, or None when it takes ``**kwargs`` (the host filters by signature)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


class CompactionRunner:
    """Runs an engine's compaction passes for one replay."""

    def __init__(self, engine: ContextEngine, timeout_s: float) -> None:
        self._engine = engine
        self._timeout_s = timeout_s
        self._executor = ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix="contextlab-compress")
        self._in_flight = 0
        self._lock = threading.Lock()
        self._compress_kwargs = _accepted_kwargs(engine.compress)
        self.prunes = overrides(engine, "prune_tool_results_only")

    def close(self) -> None:
        # Timed-out passes may still run; the host abandons them, so do not wait.
        self._executor.shutdown(wait=False, cancel_futures=True)

    def compress(
        self,
        history: list[Message],
        *,
        current_tokens: int | None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
        owned: bool = False,
    ) -> PassResult:
        """One ``compress`` pass. ``owned``: ``history`` is already a private copy for the engine
        (see :class:`contextlab.host.views.EngineViews`), so it is not cloned again."""
        snapshot = history if owned else clone_messages(history)
        wanted: dict[str, Any] = {
            "current_tokens": current_tokens,
            "focus_topic": focus_topic,
            "force": force,
            "memory_context": memory_context,
        }
        allowed = self._compress_kwargs
        kwargs = wanted if allowed is None else {k: v for k, v in wanted.items() if k in allowed}
        return self._run(lambda: self._engine.compress(snapshot, **kwargs), snapshot, is_prune=False)

    def prune(self, history: list[Message], *, current_tokens: int | None, owned: bool = False) -> PassResult:
        """One ``prune_tool_results_only`` pass (``owned`` as in :meth:`compress`)."""
        snapshot = history if owned else clone_messages(history)
        return self._run(
            lambda: self._engine.prune_tool_results_only(snapshot, current_tokens=current_tokens),
            snapshot,
            is_prune=True,
        )

    def _run(self, call: Any, snapshot: list[Message], *, is_prune: bool) -> PassResult:
        with self._lock:
            if self._in_flight >= POOL_WORKERS:
                return PassResult("error", None, 0, 0.0, "compaction pool exhausted by timed-out passes")
            self._in_flight += 1
        started = time.perf_counter()
        context = contextvars.copy_context()  # carries the virtual clock into the worker
        future: Future[Any] = self._executor.submit(context.run, call)
        future.add_done_callback(self._release)
        try:
            value = future.result(timeout=self._timeout_s)
        except FutureTimeout:
            return PassResult("timeout", None, 0, _ms(started), f"no result within {self._timeout_s:g} s")
        except Exception as error:
            return PassResult("error", None, 0, _ms(started), f"{type(error).__name__}: {error}")
        elapsed = _ms(started)
        n_pruned = 0
        if is_prune:
            if not (isinstance(value, tuple) and len(value) == 2):
                return PassResult("invalid", None, 0, elapsed, "prune_tool_results_only must return (messages, n)")
            value, n_pruned = value
            if not isinstance(n_pruned, int) or n_pruned <= 0:
                return PassResult("noop", None, 0, elapsed)
        if value is snapshot:
            return PassResult("noop", None, n_pruned, elapsed)
        if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
            return PassResult("invalid", None, 0, elapsed, "result is not a list of message dicts")
        return PassResult("changed", value, n_pruned, elapsed)

    def _release(self, _: Future[Any]) -> None:
        with self._lock:
            self._in_flight -= 1


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
