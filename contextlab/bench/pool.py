"""A crash-proof local process pool for sweeps: one cell per worker at a time, dead workers replaced.

``concurrent.futures.ProcessPoolExecutor`` breaks as a whole when one worker dies (every pending
future fails with ``BrokenProcessPool``) and cannot stop a run that never returns. This pool watches
each worker's pipe and process sentinel: a worker that dies (``os._exit``, a segfault, the OOM killer)
fails only the cell it was running, with its exit code or signal, and is replaced; a cell that runs
past ``run_timeout`` seconds has its worker killed. Shutdown never waits on a dead worker.

Workers are started with ``spawn`` (no inherited threads or locks from a notebook kernel) and receive
the shared inputs once, serialized by value with cloudpickle, so engines defined in a notebook cell or
in ``__main__`` run there too.
"""

from __future__ import annotations

import collections
import contextlib
import pickle
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import cloudpickle

from contextlab.bench.cells import Job, Outcome, install_shared, run_cell

OnDone = Callable[[Outcome], None]
OnLost = Callable[[Job, str, str], Outcome]
"""``(job, status, reason) -> Outcome`` for a cell whose worker died or timed out."""


def _worker_main(conn: Connection) -> None:
    """A worker: wait for the shared inputs, load them once, then run cells until told to stop.

    The inputs come over the pipe, not with the process: a worker imports the library (the most of
    its start-up) while the parent is still preparing them (:meth:`LocalPool.start`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    try:
        shared_blob = conn.recv_bytes()
    except (EOFError, OSError):
        return  # the parent gave up before sending them
    install_shared(cloudpickle.loads(shared_blob))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send_bytes(_STARTED)  # the run timeout counts from here, not from a slow process start
        conn.send_bytes(pickle.dumps(run_cell(job), protocol=pickle.HIGHEST_PROTOCOL))


_STARTED = b"started"


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    job: Job | None = None
    started: float = 0.0


def describe_exit(exitcode: int | None) -> str:
    """``exit code 3`` or ``killed by signal SIGKILL (9)`` for a dead worker's exit code."""
    if exitcode is None:
        return "exit status unknown"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        hint = " (the OOM killer sends it)" if number == signal.SIGKILL else ""
        return f"killed by signal {name} ({number}){hint}"
    return f"exit code {exitcode}"


class LocalPool:
    """Run cells in ``workers`` spawned processes; see the module docstring for the guarantees."""

    def __init__(self, shared_blob: bytes | None, workers: int, run_timeout: float | None = None) -> None:
        self._blob = shared_blob
        self._size = workers
        self._timeout = run_timeout
        self._context = get_context("spawn")
        self._workers: list[_Worker] = []

    def start(self) -> None:
        """Start every worker now, before the shared inputs exist: their start-up (the interpreter and
        the library's imports) runs while the caller prepares them, then :meth:`provide` sends them."""
        while len(self._workers) < self._size:
            self._start()

    def provide(self, shared_blob: bytes) -> None:
        """The shared inputs, for the workers started so far and every later one."""
        self._blob = shared_blob
        for worker in list(self._workers):
            try:
                worker.conn.send_bytes(shared_blob)
            except (OSError, ValueError):  # died while starting: a fresh one is started on dispatch
                self._discard(worker)

    def _start(self) -> _Worker:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(target=_worker_main, args=(child,), daemon=True)
        process.start()
        child.close()
        worker = _Worker(process, parent)
        self._workers.append(worker)
        if self._blob is not None:
            # A worker that died at start is found when its first cell is sent to it (_dispatch).
            with contextlib.suppress(OSError, ValueError):
                parent.send_bytes(self._blob)
        return worker

    def _discard(self, worker: _Worker) -> None:
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=5)
        worker.conn.close()
        self._workers.remove(worker)

    def run(self, jobs: Iterable[Job], on_done: OnDone, on_lost: OnLost) -> None:
        """Run every job (in the given order of priority), calling ``on_done`` as each one finishes."""
        if self._blob is None:
            raise ValueError("LocalPool.run needs the shared inputs (the constructor's or provide()'s)")
        pending = collections.deque(jobs)
        try:
            while pending or any(w.job is not None for w in self._workers):
                self._dispatch(pending)
                busy = [w for w in self._workers if w.job is not None]
                handles: list[Any] = [w.conn for w in busy] + [w.process.sentinel for w in busy]
                wait(handles, timeout=self._wait_time(busy))
                for worker in busy:
                    self._collect(worker, on_done, on_lost)
        finally:
            self.close()

    def _dispatch(self, pending: collections.deque[Job]) -> None:
        while pending:
            idle = next((w for w in self._workers if w.job is None), None)
            if idle is None:
                if len(self._workers) >= self._size:
                    return
                idle = self._start()
            job = pending.popleft()
            try:
                idle.conn.send(job)
            except (OSError, ValueError):  # died while idle: replace it and retry this job
                pending.appendleft(job)
                self._discard(idle)
                continue
            idle.job, idle.started = job, time.monotonic()

    def _wait_time(self, busy: list[_Worker]) -> float | None:
        if self._timeout is None or not busy:
            return None
        now = time.monotonic()
        return max(0.0, min(w.started + self._timeout - now for w in busy)) + 0.01

    def _collect(self, worker: _Worker, on_done: OnDone, on_lost: OnLost) -> None:
        job = worker.job
        assert job is not None
        while worker.conn.poll():
            try:
                message = worker.conn.recv_bytes()
            except (EOFError, OSError):
                break  # the pipe closed: the process died; reported below
            if message == _STARTED:
                worker.started = time.monotonic()
                continue
            outcome: Outcome = pickle.loads(message)
            worker.job = None
            on_done(outcome)
            return
        if not worker.process.is_alive():
            worker.process.join(timeout=5)
            reason = f"worker process died while running this cell: {describe_exit(worker.process.exitcode)}"
            self._discard(worker)
            on_done(on_lost(job, "crashed", reason))
            return
        if self._timeout is not None and time.monotonic() - worker.started >= self._timeout:
            self._discard(worker)
            on_done(on_lost(job, "timeout", f"stopped after the run timeout of {self._timeout:g} s"))

    def close(self) -> None:
        """Stop every worker. Every result is in by then and a worker keeps nothing else, so they are
        killed rather than asked to exit: an orderly exit (freeing a worker's heap of frames and
        libraries) took about 0.3 s at the end of every sweep, with nothing to gain from it."""
        for worker in list(self._workers):
            self._discard(worker)
