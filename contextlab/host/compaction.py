"""Running ``compress`` and ``prune_tool_results_only`` as the host does: on a pooled worker thread,
on a private deep snapshot, with a timeout; a timed-out, failed or invalid pass changes nothing.

A timed-out pass is abandoned, never waited for (the host detaches the worker). Abandoned passes
can fill the pool; when they do, the runner retires that pool and starts a fresh one, so a hung
engine never stops later passes from running (``docs/host-loop.md`` §Timeouts)."""

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
from contextlab.host.validity import row_problem
from contextlab.messages import clone_messages

POOL_WORKERS = 4
"""The host's compaction pool size."""


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
        self._executor = _new_pool()
        self._abandoned: set[Future[Any]] = set()  # timed-out passes still running in the current pool
        self._lock = threading.Lock()
        self.retired_pools = 0
        """Pools given up because abandoned passes filled them (each a hung engine's footprint)."""
        self._compress_kwargs = _accepted_kwargs(engine.compress)
        self.prunes = overrides(engine, "prune_tool_results_only")

    def close(self) -> None:
        # Timed-out passes may still run; the host abandons them, so do not wait.
        self._executor.shutdown(wait=False, cancel_futures=True)

    @property
    def abandoned(self) -> int:
        """Timed-out passes of the current pool that have not finished yet."""
        with self._lock:
            return len(self._abandoned)

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
            if len(self._abandoned) >= POOL_WORKERS:
                # Every worker is stuck in an abandoned pass: detach that pool, start a fresh one.
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = _new_pool()
                self._abandoned = set()
                self.retired_pools += 1
            executor, abandoned = self._executor, self._abandoned
        started = time.perf_counter()
        context = contextvars.copy_context()  # carries the virtual clock into the worker
        future: Future[Any] = executor.submit(context.run, call)
        try:
            value = future.result(timeout=self._timeout_s)
        except FutureTimeout:
            with self._lock:
                abandoned.add(future)
            future.add_done_callback(lambda done: self._release(abandoned, done))
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
        problem = row_problem(value)
        if problem is not None:
            return PassResult("invalid", None, 0, elapsed, problem)
        return PassResult("changed", value, n_pruned, elapsed)

    def _release(self, abandoned: set[Future[Any]], done: Future[Any]) -> None:
        with self._lock:
            abandoned.discard(done)


def _new_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix="contextlab-compress")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
