"""Run sweep cells on a Dask distributed cluster (``pip install 'contextlab[dask]'``).

The shared inputs travel once per worker (scattered with ``broadcast=True`` as one cloudpickle blob)
and are unpacked once per worker process, so each worker parses nothing and keeps one token memo
across its cells. A worker that dies fails the cell it was running (status ``crashed``); Dask's own
retries are off so the cells a dead worker held fail at once instead of killing more workers. Dask
cannot tell which of those cells killed it (a worker also holds cells queued behind the running one,
and the others may wait for shared inputs only it held), so each such cell runs again alone once the
rest of the sweep is done: one that dies alone killed its worker (status ``crashed``), the others
finish normally.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle

from contextlab.bench.cells import Job, Outcome, install_shared, installed, run_cell
from contextlab.errors import ConfigError

_LOADED: dict[str, str] = {}
"""Digest of the blob installed in this worker process (so a second sweep re-installs)."""


def _run_on_worker(blob: bytes, digest: str, job: Job) -> Outcome:
    if _LOADED.get("digest") != digest or installed() is None:
        install_shared(cloudpickle.loads(blob))
        _LOADED["digest"] = digest
    return run_cell(job)


def _client(scheduler: str | None, workers: int) -> tuple[Any, Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as error:
        raise ConfigError("--executor dask needs Dask: pip install 'contextlab[dask]'") from error
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
    try:
        blob = client.scatter(shared_blob, broadcast=True)
        ordered = list(jobs)
        # Submitted largest first with decreasing priority, so big cells start first.
        futures = {_submit(client, blob, digest, job, len(ordered) - rank, 0): job for rank, job in enumerate(ordered)}
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
            client.wait_for_workers(1)
            blob = client.scatter(shared_blob, broadcast=True)  # a dead worker may have held the only copy
            try:
                outcome = _submit(client, blob, digest, job, 0, 1).result()
            except Exception as error:  # it died alone: this cell killed its worker
                outcome = on_lost(job, "crashed", f"dask worker failed: {type(error).__name__}: {error}")
            on_done(outcome)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _submit(client: Any, blob: Any, digest: str, job: Job, priority: int, attempt: int) -> Any:
    return client.submit(
        _run_on_worker,
        blob,
        digest,
        job,
        key=f"contextlab-cell-{digest[:12]}-{job.index}-{attempt}",
        pure=False,
        retries=0,
        priority=priority,
    )
