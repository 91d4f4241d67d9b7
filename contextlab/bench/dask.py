"""Run sweep cells on a Dask distributed cluster (``pip install 'contextlab[dask]'``).

The shared inputs reach every worker process through a worker plugin: the scheduler hands it to each
worker as it joins, a worker restarted after a crash included, and the worker unpacks it once, so
each worker parses nothing and keeps one token memo across its cells. No cell depends on scattered
data: a scattered copy dies with the worker that held it, and a task waiting for lost scattered data,
or a broadcast to a worker that is going down, can wait forever (dask/distributed issues 3149 and
5704; ``docs/bench.md`` tells the hang that led here). A worker that dies fails the cell it was running
(status ``crashed``); Dask's own retries are off so the cells a dead worker held fail at once
instead of killing more workers. Dask cannot tell which of those cells killed it (a worker also
holds cells queued behind the running one), so each such cell runs again alone once the rest of
the sweep is done: one that dies alone killed its worker (status ``crashed``), the others finish
normally.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle

from contextlab.bench.cells import Job, Outcome, clear_shared, install_shared, installed, run_cell
from contextlab.errors import ConfigError

try:
    from distributed import WorkerPlugin
except ImportError as missing:  # imported only when a sweep asks for --executor dask
    raise ConfigError("--executor dask needs Dask: pip install 'contextlab[dask]'") from missing

_INSTALLED: dict[str, str] = {}
"""Digest of the inputs the plugin installed in this worker process."""


class SharedInputs(WorkerPlugin):  # type: ignore[misc]  # distributed is untyped
    """Installs a sweep's shared inputs in each worker process as it joins (a restarted one included)
    and removes them when the plugin is unregistered or the worker closes."""

    def __init__(self, blob: bytes, digest: str) -> None:
        self.blob: bytes | None = blob
        self.digest = digest

    def setup(self, worker: Any) -> None:
        if self.blob is None:  # pragma: no cover - a plugin is set up once per worker process
            return
        install_shared(cloudpickle.loads(self.blob))
        _INSTALLED["digest"] = self.digest
        self.blob = None  # a restarted worker gets a fresh copy from the scheduler

    def teardown(self, worker: Any) -> None:
        if _INSTALLED.get("digest") == self.digest:
            clear_shared()
            _INSTALLED.clear()


def _run_on_worker(digest: str, job: Job) -> Outcome:
    if _INSTALLED.get("digest") != digest or installed() is None:
        raise RuntimeError(f"this worker has no inputs for sweep {digest[:12]} (its plugin did not run)")
    return run_cell(job)


def _client(scheduler: str | None, workers: int) -> tuple[Any, Any]:
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout="10s"), None
        except Exception as error:
            raise ConfigError(f"--scheduler {scheduler}: cannot connect ({type(error).__name__}: {error})") from error
    import dask

    # A cell that kills its worker fails at once instead of killing three more workers (run_dask
    # re-runs the cells lost with a worker alone, to tell the one that killed it from bystanders).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def run_dask(
    shared_blob: bytes,
    jobs: Iterable[Job],
    workers: int,
    scheduler: str | None,
    on_done: Callable[[Outcome], None],
    on_lost: Callable[[Job, str, str], Outcome],
) -> None:
    """Run every job on the cluster at ``scheduler`` (a new local cluster of ``workers`` processes if None)."""
    from distributed import as_completed

    client, cluster = _client(scheduler, workers)
    digest = hashlib.sha256(shared_blob).hexdigest()
    name = f"contextlab-inputs-{digest[:16]}"
    try:
        client.register_plugin(SharedInputs(shared_blob, digest), name=name)
        ordered = list(jobs)
        # Submitted largest first with decreasing priority, so big cells start first.
        futures = {_submit(client, digest, job, len(ordered) - rank, 0): job for rank, job in enumerate(ordered)}
        suspects: list[Job] = []
        for future in as_completed(futures):
            job = futures[future]
            try:
                outcome = future.result()
            except Exception:  # KilledWorker and friends: lost with a worker that died
                suspects.append(job)
                continue
            on_done(outcome)
        for job in sorted(suspects, key=lambda j: j.index):
            try:
                outcome = _submit(client, digest, job, 0, 1).result()
            except Exception as error:  # it died alone: this cell killed its worker
                outcome = on_lost(job, "crashed", f"dask worker failed: {type(error).__name__}: {error}")
            on_done(outcome)
    finally:
        if cluster is None:
            # A shared cluster keeps running: free the inputs its workers hold. Best effort: a
            # scheduler gone by now has nothing left to free, and the sweep's results are in.
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(name)
        client.close()
        if cluster is not None:
            cluster.close()


def _submit(client: Any, digest: str, job: Job, priority: int, attempt: int) -> Any:
    return client.submit(
        _run_on_worker,
        digest,
        job,
        key=f"contextlab-cell-{digest[:12]}-{job.index}-{attempt}",
        pure=False,
        retries=0,
        priority=priority,
    )
