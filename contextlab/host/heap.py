"""Keep the cyclic garbage collector off the objects a replay did not make (``docs/performance.md``).

A full collection scans every tracked object of the process: the caller's transcripts, frames and
imported libraries as well as the replay's own rows. On a 2,000-request replay one such collection
cost about 8% of the run. Freezing the heap at the start of a replay (``gc.freeze``) leaves those
older objects out of every collection until the replay ends; the replay's own objects are collected
as usual, so its garbage cycles are still freed. Nothing a replay computes depends on when the
collector runs.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_owner = False


def _forget_after_fork() -> None:
    """A forked child starts with no block open and a fresh lock (the parent's may have been held by
    another thread at the fork). A freeze it inherits counts as the process's own: left alone."""
    global _lock, _depth, _owner
    _lock, _depth, _owner = threading.Lock(), 0, False


os.register_at_fork(after_in_child=_forget_after_fork)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze the objects that exist now for the duration of the block (nested and concurrent blocks
    share one freeze). A process that froze objects itself (a benchmark child) is left alone: its
    freeze is not undone at the end."""
    global _depth, _owner
    with _lock:
        if _depth == 0:
            _owner = gc.isenabled() and gc.get_freeze_count() == 0
            if _owner:
                gc.freeze()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _owner:
                _owner = False
                gc.unfreeze()
