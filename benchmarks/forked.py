"""One measurement in a child forked from the current process, its report read back over a pipe.

Each child starts from a copy of the parent's heap, so measurements taken one after the other do not
inherit each other's memory layout or memos (``benchmarks/scale.py``, ``benchmarks/probe_overhead.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable


def in_fork(measure: Callable[[], str]) -> tuple[bool, str]:
    """``measure()`` run in a forked child: ``(True, its report)``, or ``(False, the error it raised)``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_end)
        ok = True
        try:
            report = measure()
        except BaseException as error:  # reported by the parent, the benchmark goes on or stops there
            report, ok = f"{type(error).__name__}: {error}", False
        with os.fdopen(write_end, "w") as handle:
            handle.write(report)
        os._exit(0 if ok else 1)
    os.close(write_end)
    with os.fdopen(read_end) as handle:
        report = handle.read()
    _, status = os.waitpid(pid, 0)
    return status == 0 and bool(report), report or "no report"
