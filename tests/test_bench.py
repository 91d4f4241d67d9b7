"""Sweeps: cartesian product, order independent of workers, failures isolated, files written."""

from __future__ import annotations

import pandas as pd
import pytest

from contextlab import ConfigError
from contextlab.bench import BenchResult, bench, expand_grid
from contextlab.host.trace import TIMING_COLUMNS
from contextlab.tokens import ExactCounter
from tests.synthetic import BrokenInitEngine, DyingEngine, ExplodingEngine, SlidingWindowEngine, make_transcript

GRID = {"threshold_percent": [0.5, 0.75], "context_length": [3000, 6000]}


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS])


@pytest.fixture(scope="module")
def transcripts():
    return [make_transcript(name="t0"), make_transcript(turns=6, seed=3, name="t1")]


def test_product_in_fixed_order(transcripts) -> None:
    result = bench(transcripts, ["passthrough", SlidingWindowEngine], GRID, progress=False)
    summaries = result.summaries
    assert len(summaries) == 2 * 2 * 4
    assert summaries["transcript"].tolist() == ["t0"] * 8 + ["t1"] * 8
    assert summaries["engine"].tolist()[:8] == ["passthrough"] * 4 + ["sliding_window"] * 4
    assert summaries["threshold_percent"].tolist()[:4] == [0.5, 0.5, 0.75, 0.75]
    assert summaries["context_length"].tolist()[:4] == [3000, 6000, 3000, 6000]
    assert summaries["params"].tolist()[:2] == ["ctx=3000,pct=0.5", "ctx=6000,pct=0.5"]
    assert (summaries["status"] == "ok").all()
    # the grid really reached the host: threshold tokens follow window x percent
    sliding = summaries[summaries["engine"] == "sliding_window"]
    assert sliding["threshold_tokens"].tolist()[:4] == [1500, 3000, 2250, 4500]
    assert sliding["compactions"].iloc[0] > sliding["compactions"].iloc[3]
    # trace rows are grouped by run, in job order
    runs = result.trace[["transcript", "engine", "params"]].drop_duplicates()
    assert runs.reset_index(drop=True).equals(summaries[["transcript", "engine", "params"]])


def test_two_workers_give_the_same_frames(transcripts) -> None:
    engines = ["passthrough", SlidingWindowEngine, ExplodingEngine]
    one = bench(transcripts, engines, GRID, workers=1, progress=False)
    two = bench(transcripts, engines, GRID, workers=2, progress=False)
    pd.testing.assert_frame_equal(_untimed(one.trace), _untimed(two.trace))
    pd.testing.assert_frame_equal(_untimed(one.compactions), _untimed(two.compactions))
    pd.testing.assert_frame_equal(_untimed(one.summaries), _untimed(two.summaries))


def test_failing_engines_fail_their_runs_only(transcripts) -> None:
    result = bench(
        transcripts,
        [ExplodingEngine, "passthrough", BrokenInitEngine, "no_such_engine"],
        workers=2,
        progress=False,
    )
    by_engine = result.summaries.set_index(["transcript", "engine"])
    assert by_engine.loc[("t0", "passthrough"), "status"] == "ok"
    assert by_engine.loc[("t1", "passthrough"), "requests"] == 12
    exploded = by_engine.loc[("t0", "exploding")]
    assert exploded["status"] == "failed" and "boom in should_compress" in exploded["error"]
    broken = by_engine.loc[("t0", "BrokenInitEngine")]
    assert broken["status"] == "failed" and "cannot start" in broken["error"]
    assert "unknown engine 'no_such_engine'" in by_engine.loc[("t1", "no_such_engine"), "error"]
    assert len(result.failed) == 6
    assert set(result.trace["engine"]) == {"exploding", "passthrough"}  # exploding kept its pre-failure row


def test_a_dead_worker_fails_its_runs_and_the_sweep_returns(transcripts) -> None:
    result = bench(transcripts[:1], [DyingEngine, "passthrough"], workers=2, progress=False)
    # One transcript is one task, so the whole task is lost with the process that ran it.
    assert result.summaries["status"].tolist() == ["failed", "failed"]
    assert result.summaries["error"].str.startswith("worker failed: BrokenProcessPool").all()
    assert result.summaries["engine"].tolist() == ["DyingEngine", "passthrough"]


def test_engine_parameters_in_the_grid(transcripts) -> None:
    result = bench(
        transcripts[:1],
        [SlidingWindowEngine, "passthrough"],
        {"keep": [2, 8]},
        params={"threshold_percent": 0.5},
        settings=None,
        progress=False,
    )
    ok = result.summaries[result.summaries["status"] == "ok"]
    assert ok["params"].tolist() == [
        "ctx=200000,keep=2,threshold_percent=0.5",
        "ctx=200000,keep=8,threshold_percent=0.5",
    ]
    # passthrough does not take ``keep``: a bad-parameter failure, not a crash
    assert result.failed["error"].str.contains("bad parameters").all() and len(result.failed) == 2


def test_one_memo_reused_across_runs(transcripts) -> None:
    counter = ExactCounter()
    bench(transcripts[:1], ["passthrough"], {"threshold_percent": [0.5]}, counter=counter, progress=False)
    size = len(counter._message_memo)
    assert size > 0
    # the same messages under other settings are never tokenized again
    bench(transcripts[:1], ["passthrough"], GRID, counter=counter, progress=False)
    assert len(counter._message_memo) == size


def test_progress_bar_respects_tqdm_disable(transcripts, monkeypatch, capsys) -> None:
    pytest.importorskip("tqdm")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    bench(transcripts[:1], ["passthrough"])
    assert "bench" not in capsys.readouterr().err
    monkeypatch.delenv("TQDM_DISABLE")
    bench(transcripts[:1], ["passthrough"], {"threshold_percent": [0.5, 0.75]})
    assert "bench" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_write_round_trip(transcripts, tmp_path, fmt) -> None:
    result = bench(
        transcripts[:1],
        [SlidingWindowEngine, ExplodingEngine],
        {"threshold_percent": [0.5]},
        settings=None,
        progress=False,
    )
    paths = result.write(tmp_path / "out", fmt)
    assert sorted(p.name for p in paths.values()) == sorted(f"{n}.{fmt}" for n in ("trace", "compactions", "summary"))
    reader = pd.read_csv if fmt == "csv" else pd.read_parquet
    assert len(reader(paths["trace"])) == len(result.trace)
    assert reader(paths["summary"])["status"].tolist() == ["ok", "failed"]


def test_bad_inputs_are_config_errors(transcripts) -> None:
    with pytest.raises(ConfigError, match="no engines"):
        bench(transcripts, [])
    with pytest.raises(ConfigError, match="empty"):
        bench(transcripts, ["passthrough"], {"threshold_percent": []})
    with pytest.raises(ConfigError, match=r"grid threshold_percent=1\.5"):
        bench(transcripts, ["passthrough"], {"threshold_percent": [0.5, 1.5]})
    with pytest.raises(ConfigError, match="expected a list"):
        bench(transcripts, ["passthrough"], {"context_length": 4000})  # type: ignore[dict-item]

    class Local(SlidingWindowEngine):
        pass

    with pytest.raises(ConfigError, match="cannot be sent to a worker"):
        bench(transcripts, [Local, "passthrough"], workers=2, progress=False)
    assert isinstance(bench(transcripts, [Local], progress=False), BenchResult)  # in-process is fine

    class InNotebook(SlidingWindowEngine):  # what a class from a notebook cell looks like
        pass

    InNotebook.__module__, InNotebook.__qualname__ = "__main__", "InNotebook"
    with pytest.raises(ConfigError, match="defined in __main__"):
        bench(transcripts, [InNotebook], workers=2, progress=False)


def test_expand_grid_order() -> None:
    assert expand_grid(None) == [()]
    assert expand_grid({"a": [1, 2], "b": ["x"]}) == [(("a", 1), ("b", "x")), (("a", 2), ("b", "x"))]


def test_real_transcripts(shared_transcripts) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    result = bench([path], ["passthrough"], progress=False)
    assert len(result.summaries) == 200 and (result.summaries["status"] == "ok").all()
    assert result.trace["prompt_tokens"].gt(0).all()
