"""``executor="dask"`` on a real ``LocalCluster`` with two worker processes gives the ``workers=1`` frames."""

from __future__ import annotations

import pandas as pd
import pytest

from contextlab.bench import bench
from contextlab.bench.cells import installed
from contextlab.examples import RecentTurnsEngine, tool_conversation
from contextlab.host.trace import TIMING_COLUMNS
from tests.synthetic import DyingEngine

distributed = pytest.importorskip("distributed")


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS])


def _holds_inputs() -> bool:
    return installed() is not None


def _plugin_names(client: distributed.Client) -> list[str]:
    return list(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.worker_plugins)))


def test_dask_local_cluster_matches_one_worker() -> None:
    transcripts = [tool_conversation(8, 1_800, seed=0, name="t0"), tool_conversation(6, 1_800, seed=3, name="t1")]
    engines = ["passthrough", RecentTurnsEngine]
    grid = {"threshold_percent": [0.5, 0.75], "context_length": [3000, 6000]}
    one = bench(transcripts, engines, grid, workers=1, progress=False)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        assert len(cluster.workers) == 2
        on_dask = bench(
            transcripts, engines, grid, executor="dask", scheduler=cluster.scheduler_address, progress=False
        )
        # The cluster outlives the sweep: its workers no longer hold the sweep's inputs.
        with distributed.Client(cluster) as client:
            assert list(client.run(_holds_inputs).values()) == [False, False]
            assert not any(name.startswith("contextlab-") for name in _plugin_names(client))
    finally:
        cluster.close()
    pd.testing.assert_frame_equal(_untimed(one.trace), _untimed(on_dask.trace))
    pd.testing.assert_frame_equal(_untimed(one.compactions), _untimed(on_dask.compactions))
    pd.testing.assert_frame_equal(_untimed(one.summaries), _untimed(on_dask.summaries))


def test_dask_worker_death_fails_only_its_run() -> None:
    result = bench(
        [tool_conversation(8, 1_800, seed=0, name="t0")],
        [DyingEngine, "passthrough"],
        executor="dask",
        workers=2,
        progress=False,
    )
    assert result.summaries["status"].tolist() == ["crashed", "ok"]
    assert "dask worker failed" in result.summaries["error"].iloc[0]


def test_cells_beside_dying_ones_still_finish() -> None:
    """Two cells kill their workers; every other cell (queued beside them, or waiting for the shared
    inputs a dead worker held) still finishes ok."""
    transcripts = [tool_conversation(6, 1_800, seed=s, name=f"t{s}") for s in range(3)]
    result = bench(
        transcripts,
        [DyingEngine, "passthrough", RecentTurnsEngine],
        executor="dask",
        workers=2,
        progress=False,
    )
    runs = result.summaries
    lost = runs.loc[runs["status"] != "ok", ["transcript", "engine"]]
    assert sorted(lost.itertuples(index=False, name=None)) == [(t.transcript_id, "dying") for t in transcripts]
