"""The virtual clock a replay runs on.

Engines that need time (cooldowns, TTLs) call :func:`now` instead of ``time.time()``: inside a
replay it returns the recorded timestamp of the current request (or a steady synthetic clock), so
the same transcript gives the same result on any machine. Outside a replay it is the wall clock.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager


class VirtualClock:
    """A clock that only moves when the replay moves it."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def set(self, timestamp: float) -> None:
        """Jump to a recorded timestamp; the clock never runs backwards."""
        self._now = max(self._now, float(timestamp))

    def advance(self, seconds: float) -> None:
        self._now += max(0.0, float(seconds))


_CURRENT: contextvars.ContextVar[VirtualClock | None] = contextvars.ContextVar("contextlab_clock", default=None)


def now() -> float:
    """Seconds since the epoch on the active virtual clock, else the wall clock."""
    clock = _CURRENT.get()
    return clock.now() if clock is not None else time.time()


@contextmanager
def using(clock: VirtualClock) -> Iterator[VirtualClock]:
    """Make ``clock`` the active clock in this context (worker threads inherit it via copy_context)."""
    token = _CURRENT.set(clock)
    try:
        yield clock
    finally:
        _CURRENT.reset(token)
