"""Keep the cyclic garbage collector's work in step with what a replay does (``docs/performance.md``).

Two things made the collector's share of a replay grow with its length:

* A full collection scans every tracked object of the process: the caller's transcripts, frames and
  imported libraries as well as the replay's own rows (one such collection cost about 8% of a
  2,000-request replay). Freezing the heap at the start of a replay (``gc.freeze``) leaves those
  older objects out of every collection until the replay ends.
* The replay's own state (history, memos, an engine's index, the cache model's blocks) grows for
  the whole session and holds next to no reference cycles, yet with CPython's default thresholds
  every tenth middle-generation pass rescans all of it: at 4,840 requests a full pass took up to
  0.25 s and collected nothing. Inside a replay a full collection waits for ``_OLD_GENERATION_PASSES``
  middle-generation passes instead of ten. The young and middle generations are collected as
  before, so short-lived garbage cycles are still freed promptly.
* A full collection put off is still due when the block ends (more middle passes ran than the
  thresholds the block found allow), and CPython ran it at its next middle pass, after the freeze
  was undone: over the whole heap again (30-62 ms in a fresh process after a 0.5 s replay of
  ``coding-agent``). The block runs it itself just before undoing the freeze, over the objects
  made inside it only.

Nothing a replay computes depends on when the collector runs.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Middle-generation passes between full collections inside a replay (CPython's default is 10). With
# the default young thresholds (700 net allocations a young pass, ten young passes a middle one) a
# full collection then waits for about 7 million net allocations; a 4,840-request `retrieval`
# replay with a cache profile makes 94 middle passes, so it runs none.
_OLD_GENERATION_PASSES = 1_000

_lock = threading.RLock()
_depth = 0
_owner = False
_saved: tuple[int, int, int] | None = None  # the thresholds before the block relaxed them


def _forget_after_fork() -> None:
    """A forked child starts with no block open and a fresh lock (the parent's may have been held by
    another thread at the fork). A freeze and thresholds it inherits count as the process's own:
    left alone."""
    global _lock, _depth, _owner, _saved
    _lock, _depth, _owner, _saved = threading.RLock(), 0, False, None


os.register_at_fork(after_in_child=_forget_after_fork)


@contextmanager
def quiet_collector() -> Iterator[None]:
    """For the duration of the block, freeze the objects that exist now and make full collections
    rare (nested and concurrent blocks share one setting). A process that froze objects itself (a
    benchmark child) keeps its freeze at the end; thresholds changed by someone else while the block
    ran are kept too."""
    global _depth, _owner, _saved
    with _lock:
        if _depth == 0:
            _owner = gc.isenabled() and gc.get_freeze_count() == 0
            if _owner:
                gc.freeze()
            young, middle, old = gc.get_threshold()
            if 0 < old < _OLD_GENERATION_PASSES:
                _saved = (young, middle, old)
                gc.set_threshold(young, middle, _OLD_GENERATION_PASSES)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                due = False
                if _saved is not None:
                    # CPython's own rule: a full collection after `old` middle passes (get_count()[2]).
                    due = gc.get_count()[2] > _saved[2]
                    if gc.get_threshold() == (*_saved[:2], _OLD_GENERATION_PASSES):  # nobody changed them since
                        gc.set_threshold(*_saved)
                    _saved = None
                owner, _owner = _owner, False
                if due and gc.isenabled():
                    # While the heap the block found is still frozen: only what the block made is scanned.
                    # (A finalizer run here may open a block of its own: the lock is re-entrant and
                    # this block's ownership was taken out above.)
                    gc.collect()
                if owner:
                    gc.unfreeze()
