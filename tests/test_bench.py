"""Sweeps: cartesian product, order independent of workers, failures isolated, files written."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from contextlab import ConfigError
from contextlab.bench import bench, expand_grid
from contextlab.examples import RecentTurnsEngine, tool_conversation
from contextlab.host.trace import TIMING_COLUMNS
from contextlab.tokens import ExactCounter
from tests.bench_engines import ExitOnSessionEngine, SleepForeverEngine
from tests.synthetic import BrokenInitEngine, DyingEngine, ExplodingEngine

GRID = {"threshold_percent": [0.5, 0.75], "context_length": [3000, 6000]}


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS])


@pytest.fixture(scope="module")
def transcripts():
    return [tool_conversation(8, 1_800, seed=0, name="t0"), tool_conversation(6, 1_800, seed=3, name="t1")]


def test_product_in_fixed_order(transcripts) -> None:
    result = bench(transcripts, ["passthrough", RecentTurnsEngine], GRID, progress=False)
    summaries = result.summaries
    assert len(summaries) == 2 * 2 * 4
    assert summaries["transcript"].tolist() == ["t0"] * 8 + ["t1"] * 8
    assert summaries["engine"].tolist()[:8] == ["passthrough"] * 4 + ["recent_turns"] * 4
    assert summaries["threshold_percent"].tolist()[:4] == [0.5, 0.5, 0.75, 0.75]
    assert summaries["context_length"].tolist()[:4] == [3000, 6000, 3000, 6000]
    assert summaries["params"].tolist()[:2] == ["ctx=3000,pct=0.5", "ctx=6000,pct=0.5"]
    assert (summaries["status"] == "ok").all()
    # the grid really reached the host: threshold tokens follow window x percent
    sliding = summaries[summaries["engine"] == "recent_turns"]
    assert sliding["threshold_tokens"].tolist()[:4] == [1500, 3000, 2250, 4500]
    assert sliding["compactions"].iloc[0] > sliding["compactions"].iloc[3]
    # trace rows are grouped by run, in job order
    runs = result.trace[["transcript", "engine", "params"]].drop_duplicates()
    assert runs.reset_index(drop=True).equals(summaries[["transcript", "engine", "params"]])


def test_two_workers_give_the_same_frames(transcripts) -> None:
    engines = ["passthrough", RecentTurnsEngine, ExplodingEngine]
    one = bench(transcripts, engines, GRID, workers=1, progress=False)
    two = bench(transcripts, engines, GRID, workers=2, progress=False)
    pd.testing.assert_frame_equal(_untimed(one.trace), _untimed(two.trace))
    pd.testing.assert_frame_equal(_untimed(one.compactions), _untimed(two.compactions))
    pd.testing.assert_frame_equal(_untimed(one.summaries), _untimed(two.summaries))


def test_failing_engines_fail_their_runs_only(transcripts) -> None:
    result = bench(transcripts, [ExplodingEngine, "passthrough", BrokenInitEngine], workers=2, progress=False)
    by_engine = result.summaries.set_index(["transcript", "engine"])
    assert by_engine.loc[("t0", "passthrough"), "status"] == "ok"
    assert by_engine.loc[("t1", "passthrough"), "requests"] == 12
    exploded = by_engine.loc[("t0", "exploding")]
    assert exploded["status"] == "failed" and "boom in should_compress" in exploded["error"]
    broken = by_engine.loc[("t0", "BrokenInitEngine")]
    assert broken["status"] == "failed" and "cannot start" in broken["error"]
    assert len(result.failed) == 4
    assert set(result.trace["engine"]) == {"exploding", "passthrough"}  # exploding kept its pre-failure row


def test_unknown_engine_stops_before_anything_runs(transcripts) -> None:
    with pytest.raises(ConfigError, match=r"unknown engine 'compresor'; did you mean 'compressor'\?"):
        bench(transcripts, ["passthrough", "compresor"], progress=False)


def test_a_dead_worker_fails_only_its_run(transcripts) -> None:
    result = bench(transcripts[:1], [DyingEngine, "passthrough"], workers=2, progress=False)
    assert result.summaries["status"].tolist() == ["crashed", "ok"]
    assert result.summaries["error"].iloc[0] == "worker process died while running this cell: exit code 3"
    assert result.summaries["engine"].tolist() == ["dying", "passthrough"]  # its name, as its ok runs are


SIX = [tool_conversation(3, 240, seed=i, name=f"t{i}") for i in range(6)]


@pytest.mark.parametrize("delay_s", [0.0, 0.5])
def test_a_process_exit_on_one_transcript_of_six(delay_s) -> None:
    engines = [ExitOnSessionEngine, "passthrough"]
    result = bench(SIX, engines, {"ExitOnSessionEngine.delay_s": [delay_s]}, workers=2, progress=False)
    summaries = result.summaries.set_index(["transcript", "engine"])
    crashed = summaries[summaries["status"] != "ok"]
    # the crashed run carries the label of the same engine's ok runs (one label function)
    assert crashed.index.tolist() == [("t3", "exit_on_session")]
    assert (result.summaries["engine"] == "exit_on_session").sum() == 6
    assert crashed["status"].tolist() == ["crashed"] and crashed["error"].str.endswith("exit code 7").all()
    assert len(result.summaries) == 12 and (summaries.drop(("t3", "exit_on_session"))["status"] == "ok").all()
    # the pool was rebuilt: every run after the crash replayed all its requests
    assert (result.summaries[result.summaries["status"] == "ok"]["requests"] == 6).all()


def test_a_run_that_never_returns_is_stopped_by_the_timeout(transcripts) -> None:
    started = time.monotonic()
    # generous for a loaded machine: the replays that must finish take well under a second when idle
    result = bench(transcripts, [SleepForeverEngine, "passthrough"], workers=1, run_timeout=8, progress=False)
    assert time.monotonic() - started < 120
    assert result.summaries["status"].tolist() == ["timeout", "ok", "timeout", "ok"]
    assert result.summaries["error"].iloc[0] == "stopped after the run timeout of 8 s"


def test_engines_from_a_notebook_cell_run_in_workers(transcripts) -> None:
    class InNotebook(RecentTurnsEngine):  # what a class from a notebook cell looks like
        @property
        def name(self) -> str:
            return "in_notebook"

    InNotebook.__module__, InNotebook.__qualname__ = "__main__", "InNotebook"
    one = bench(transcripts, [InNotebook], {"keep_turns": [2, 4]}, workers=1, progress=False)
    two = bench(transcripts, [InNotebook], {"keep_turns": [2, 4]}, workers=2, progress=False)
    assert (two.summaries["status"] == "ok").all() and set(two.summaries["engine"]) == {"in_notebook"}
    pd.testing.assert_frame_equal(_untimed(one.summaries), _untimed(two.summaries))


def test_engine_parameters_in_the_grid(transcripts) -> None:
    result = bench(
        transcripts[:1],
        [RecentTurnsEngine, "passthrough"],
        {"RecentTurnsEngine.keep_turns": [2, 8]},
        params={"threshold_percent": 0.5},
        settings=None,
        progress=False,
    )
    assert (result.summaries["status"] == "ok").all()
    assert result.summaries["params"].tolist() == [
        "ctx=200000,keep_turns=2,threshold_percent=0.5",
        "ctx=200000,keep_turns=8,threshold_percent=0.5",
        "ctx=200000,threshold_percent=0.5",
    ]


def test_grid_keys_are_checked_before_anything_runs(transcripts) -> None:
    # passthrough does not take ``keep_turns``: an error up front naming the engine, not a table of failed runs
    with pytest.raises(
        ConfigError,
        match=r"--grid keep_turns: engine 'passthrough' takes no parameter 'keep_turns'"
        r".*e\.g\. recent_turns\.keep_turns",
    ):
        bench(transcripts, [RecentTurnsEngine, "passthrough"], {"keep_turns": [2, 8]}, progress=False)
    with pytest.raises(ConfigError, match=r"takes no parameter 'threshold_percen'; did you mean 'threshold_percent'\?"):
        bench(transcripts, ["passthrough"], {"threshold_percen": [0.5]}, progress=False)
    with pytest.raises(ConfigError, match=r"no engine named 'compresor' in this sweep; did you mean 'compressor'\?"):
        bench(transcripts, ["compressor"], {"compresor.threshold_percent": [0.5]}, progress=False)
    with pytest.raises(ConfigError, match=r"--param keep_turns: engine 'passthrough' takes no parameter 'keep_turns'"):
        bench(transcripts, ["passthrough"], params={"keep_turns": 2}, progress=False)


def test_scoped_grid_applies_to_one_engine(transcripts) -> None:
    grid = {"context_length": [3000], "recent_turns.keep_turns": [2, 8]}
    result = bench(transcripts[:1], [RecentTurnsEngine, "passthrough"], grid, progress=False)
    assert result.summaries["engine"].tolist() == ["recent_turns", "recent_turns", "passthrough"]
    assert result.summaries["params"].tolist() == ["ctx=3000,keep_turns=2", "ctx=3000,keep_turns=8", "ctx=3000"]


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
        [RecentTurnsEngine, ExplodingEngine],
        {"threshold_percent": [0.5]},
        settings=None,
        progress=False,
    )
    paths = result.write(tmp_path / "out", fmt)
    names = ("trace", "compactions", "summary", "probes", "compaction_diff", "compaction_items", "faithfulness")
    assert sorted(p.name for p in paths.values()) == sorted(f"{n}.{fmt}" for n in names)
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


def test_expand_grid_order() -> None:
    assert expand_grid(None) == [()]
    assert expand_grid({"a": [1, 2], "b": ["x"]}) == [(("a", 1), ("b", "x")), (("a", 2), ("b", "x"))]


def test_real_transcripts(shared_transcripts) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    result = bench([path], ["passthrough"], progress=False)
    assert len(result.summaries) == 200 and (result.summaries["status"] == "ok").all()
    assert result.trace["prompt_tokens"].gt(0).all()


def test_resume_skips_finished_cells_and_survives_an_interrupt(transcripts, tmp_path, monkeypatch) -> None:
    import contextlab.bench.cells as cells

    real = cells.run_cell
    calls: list[int] = []

    def interrupted_after_two(job):  # Ctrl-C arrives while the third cell runs
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(job.index)
        return real(job)

    monkeypatch.setattr("contextlab.bench.run_cell", interrupted_after_two)
    with pytest.raises(KeyboardInterrupt):
        bench(transcripts, ["passthrough", RecentTurnsEngine], {"threshold_percent": [0.5]}, out=tmp_path)
    stored = sorted((tmp_path / "cells").iterdir())
    assert len(stored) == 2 and not [p for p in stored if p.name.endswith(".tmp")]
    monkeypatch.setattr("contextlab.bench.run_cell", real)
    resumed = bench(
        transcripts, ["passthrough", RecentTurnsEngine], {"threshold_percent": [0.5]}, out=tmp_path, progress=False
    )
    fresh = bench(transcripts, ["passthrough", RecentTurnsEngine], {"threshold_percent": [0.5]}, progress=False)
    assert resumed.reused == 2 and fresh.reused == 0
    pd.testing.assert_frame_equal(_untimed(resumed.trace), _untimed(fresh.trace))
    pd.testing.assert_frame_equal(_untimed(resumed.summaries), _untimed(fresh.summaries))
    # other settings are other cells: nothing reused
    other = bench(transcripts, ["passthrough"], {"threshold_percent": [0.6]}, out=tmp_path, progress=False)
    assert other.reused == 0


def test_parquet_keeps_a_declared_schema_and_lists(transcripts, tmp_path) -> None:
    result = bench(transcripts[:1], ["passthrough"], progress=False)
    result.trace["tags"] = [["a", "b"]] * len(result.trace)  # a list column another observer might add
    paths = result.write(tmp_path, "parquet")
    import pyarrow.parquet as pq

    schema = pq.read_schema(paths["trace"])
    assert str(schema.field("compress_trigger").type) == "string"  # all empty, still a string column
    assert str(schema.field("prompt_tokens").type) == "int64" and str(schema.field("tags").type).startswith("list<")
    assert list(pd.read_parquet(paths["trace"])["tags"].iloc[0]) == ["a", "b"]
    csv = result.write(tmp_path, "csv")
    assert pd.read_csv(csv["trace"])["tags"].iloc[0] == '["a", "b"]'  # JSON in CSV


def test_each_runs_measurement_frames_are_written_with_a_schema_and_resumed(transcripts, tmp_path) -> None:
    import pyarrow.parquet as pq

    measure_frames = ("probes", "compaction_diff", "compaction_items", "faithfulness")

    engines = ["passthrough", RecentTurnsEngine]
    grid = {"context_length": [3000]}
    first = bench(transcripts, engines, grid, out=tmp_path, progress=False)
    assert tuple(first.frames) == measure_frames
    probes = first.frames["probes"]
    runs = probes.groupby(["transcript", "engine"]).size()
    assert len(runs) == len(transcripts) * len(engines)  # every run's rows, named by their run
    assert len(first.frames["compaction_diff"]) > 0  # the recent-turns engine dropped rows
    paths = first.write(tmp_path, "parquet")
    for name in measure_frames:
        assert paths[name] == tmp_path / f"{name}.parquet"
    schema = pq.read_schema(paths["faithfulness"])  # no findings: the columns keep their types
    assert str(schema.field("text").type) == "string" and str(schema.field("request").type) == "int64"
    items = pq.read_schema(paths["compaction_items"])
    assert str(items.field("needed_later").type) == "bool" and str(items.field("next_use").type) == "int64"
    pd.testing.assert_frame_equal(pd.read_parquet(paths["probes"]), probes, check_dtype=False)
    resumed = bench(transcripts, engines, grid, out=tmp_path, progress=False)
    assert resumed.reused == len(transcripts) * len(engines)
    for name in measure_frames:
        pd.testing.assert_frame_equal(resumed.frames[name], first.frames[name])


def test_a_sweep_without_probes_has_the_same_host_columns_and_no_measurement_frames(transcripts, tmp_path) -> None:
    engines = ["passthrough", RecentTurnsEngine]
    grid = {"context_length": [3000]}
    probed = bench(transcripts, engines, grid, progress=False)
    plain = bench(transcripts, engines, grid, probes=False, out=tmp_path, progress=False)
    assert plain.frames == {} and "identifier_retention" not in plain.trace.columns
    assert "identifier_retention" in probed.trace.columns
    # The probe only observes: every column a plain run has is the probed run's, value for value.
    pd.testing.assert_frame_equal(_untimed(plain.trace), _untimed(probed.trace)[list(_untimed(plain.trace).columns)])
    pd.testing.assert_frame_equal(_untimed(plain.compactions), _untimed(probed.compactions))
    # A probed sweep into the same folder is other cells: the plain ones are not reused for it.
    again = bench(transcripts, engines, grid, out=tmp_path, progress=False)
    assert again.reused == 0 and tuple(again.frames) == tuple(probed.frames)


class _CountingEncoding:
    """Stands in for the tokenizer and records what it is asked to encode."""

    def __init__(self, encoding: object) -> None:
        self.encoding = encoding
        self.texts: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.texts.append(text)
        return self.encoding.encode_ordinary(text)  # type: ignore[attr-defined, no-any-return]


def test_workers_get_the_transcripts_token_counts_and_do_not_count_them_again() -> None:
    from pathlib import Path

    from contextlab import HostSettings, load_transcript, replay
    from contextlab.bench import transcript_token_counts
    from contextlab.bench.cells import Shared
    from contextlab.tokens import load_encoding

    transcript = load_transcript(Path(__file__).resolve().parent.parent / "datasets" / "support-agent.jsonl.gz")
    counts = transcript_token_counts(Shared([transcript], [], HostSettings(), {}, []))
    encoding = load_encoding("cl100k_base")
    assert counts and all(len(encoding.encode_ordinary(text)) == n for text, n in counts.items())

    def encoded(seed: dict[str, int]) -> tuple[list[str], pd.DataFrame]:
        counter = ExactCounter()
        counter.seed(seed)
        spy = _CountingEncoding(counter._encoding)
        counter._encoding = spy
        result = replay(transcript, "compressor", context_length=32_000, counter=counter, probes=False)
        return spy.texts, result.trace

    cold_texts, cold_trace = encoded({})
    seeded_texts, seeded_trace = encoded(counts)
    # Only what the transcript does not hold is left to count (summaries, merged rows); same trace.
    assert len(seeded_texts) < len(cold_texts) / 5 and not set(seeded_texts) & set(counts)
    pd.testing.assert_frame_equal(
        seeded_trace.drop(columns=list(TIMING_COLUMNS & set(seeded_trace.columns))),
        cold_trace.drop(columns=list(TIMING_COLUMNS & set(cold_trace.columns))),
    )
