"""Run sweep cells on a Dask distributed cluster (``pip install 'contextlab[dask]'``).

The shared inputs travel once per worker (scattered with ``broadcast=True`` as one cloudpickle blob)
and are unpacked once per worker process, so each worker parses nothing and keeps one token memo
across its cells. A worker that dies fails the cell it was running (status ``crashed``); Dask's own
retries are off so a cell that kills its worker is not re-run on the next one.
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

    # A cell that kills its worker fails once (status crashed) instead of killing three more workers.
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
        futures = {
            client.submit(
                _run_on_worker,
                blob,
                digest,
                job,
                key=f"contextlab-cell-{digest[:12]}-{job.index}",
                pure=False,
                retries=0,
                priority=len(ordered) - rank,
            ): job
            for rank, job in enumerate(ordered)
        }
        for future in as_completed(futures):
            job = futures[future]
            try:
                outcome = future.result()
            except Exception as error:  # KilledWorker and friends: the worker died running it
                outcome = on_lost(job, "crashed", f"dask worker failed: {type(error).__name__}: {error}")
            on_done(outcome)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
