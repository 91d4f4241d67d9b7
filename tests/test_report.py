"""The HTML report: self-contained, built from frames (or files), deterministic, errors named."""

from __future__ import annotations

import base64
import re

import pytest

from contextlab import ConfigError
from contextlab.bench import bench
from contextlab.examples import RecentTurnsEngine, tool_conversation
from contextlab.host.settings import HostSettings
from contextlab.report import (
    build_report,
    engine_table,
    load_frame,
    sibling_frames,
    summaries_from_trace,
    write_report,
)
from tests.synthetic import ExplodingEngine


@pytest.fixture(scope="module")
def sweep():
    return bench(
        [tool_conversation(8, 1_800, seed=0, name="t<0>"), tool_conversation(8, 1_800, seed=2, name="t1")],
        ["passthrough", RecentTurnsEngine, ExplodingEngine],
        settings=HostSettings(context_length=4000, threshold_percent=0.5),
        progress=False,
    )


def test_report_is_self_contained_and_complete(sweep) -> None:
    text = build_report(sweep.trace, sweep.compactions, sweep.summaries, title="My <sweep>")
    assert text.startswith("<!DOCTYPE html>") and "<title>My &lt;sweep&gt;</title>" in text
    assert "src='http" not in text and "<script" not in text
    images = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)
    assert len(images) == 1 + 2 + 1  # engine comparison + one figure per transcript + break timeline
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "<h3>t&lt;0&gt;</h3>" in text  # transcript ids are escaped
    assert "Failed runs" in text and "boom in should_compress" in text
    peak = int(sweep.summaries.loc[sweep.summaries["engine"] == "recent_turns", "prompt_tokens_max"].max())
    assert f"{peak:,}" in text and text.index("Leaderboard") < text.index("Per transcript")
    assert "Flagged, not ranked" in text  # the exploding engine's failed runs are not ranked


def test_report_is_deterministic_and_limits_transcripts(sweep, tmp_path) -> None:
    a = write_report(tmp_path / "a.html", sweep.trace, sweep.compactions, sweep.summaries)
    b = write_report(tmp_path / "b.html", sweep.trace, sweep.compactions, sweep.summaries)
    assert a.read_bytes() == b.read_bytes()
    short = build_report(sweep.trace, max_transcripts=1)
    assert "Showing the first 1 of 2 transcripts" in short and "<h3>t1</h3>" not in short


def test_summaries_from_trace_match_the_replay(sweep) -> None:
    ok = sweep.summaries[sweep.summaries["status"] == "ok"].reset_index(drop=True)
    rebuilt = summaries_from_trace(sweep.trace, sweep.compactions)
    rebuilt = rebuilt[rebuilt["engine"] != "exploding"].reset_index(drop=True)
    for column in ("requests", "compactions", "prompt_tokens_total", "prefix_tokens_total"):
        assert rebuilt[column].tolist() == ok[column].tolist()
    table = engine_table(sweep.summaries)
    assert table["runs"].tolist() == [2, 2, 2] and table["failed"].tolist() == [0, 0, 2]


def test_files_and_siblings(sweep, tmp_path) -> None:
    paths = sweep.write(tmp_path, "parquet")
    # Every frame the sweep wrote is found beside its trace (bench --out names: summary.parquet, ...).
    assert sibling_frames(paths["trace"]) == {name: path for name, path in paths.items() if name != "trace"}
    replay_layout = {name: tmp_path / f"run.{name}.csv" for name in ("compactions", "faithfulness")}
    for path in replay_layout.values():
        path.write_text("x\n")
    assert sibling_frames(tmp_path / "run.csv") == replay_layout  # replay --out names: run.<frame>.csv
    assert len(load_frame(paths["trace"])) == len(sweep.trace)
    with pytest.raises(ConfigError, match="no such file"):
        load_frame(tmp_path / "missing.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"unsupported file type \.json"):
        load_frame(tmp_path / "x.json")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ConfigError, match="cannot read as parquet"):
        load_frame(tmp_path / "bad.parquet")


def test_bad_frame_names_the_column(sweep) -> None:
    with pytest.raises(ConfigError, match="missing column 'prompt_tokens'"):
        build_report(sweep.trace.drop(columns=["prompt_tokens"]))


def test_cache_columns_give_hit_rate_and_cost(tmp_path) -> None:
    from contextlab import CacheObserver

    result = bench(
        [tool_conversation(8, 1_800, seed=0)],
        ["passthrough", RecentTurnsEngine],
        settings=HostSettings(context_length=4000, threshold_percent=0.5),
        observers=[CacheObserver(["anthropic:claude-sonnet-5-5"])],
        progress=False,
    )
    rebuilt = summaries_from_trace(result.trace, result.compactions)
    for column in ("cache_read_tokens_total", "cost_usd"):
        assert rebuilt[column].tolist() == pytest.approx(result.summaries[column].tolist())
    table = engine_table(result.summaries)
    assert table["cache_hit_rate"].tolist() == pytest.approx(result.summaries["cache_hit_rate"].tolist(), abs=1e-4)
    text = build_report(result.trace, result.compactions, result.summaries)
    assert len(re.findall(r"data:image/png;base64,", text)) == 1 + 1 + 1  # cost bars, transcript panel, breaks
    assert "cost</th>" in text and "$" in text
    assert "cache_hit_rate" in text and "cost_usd" in text


def test_engine_table_hit_rate_is_the_summary_definition_over_the_group() -> None:
    """Reads over the prompt tokens the provider saw, token-weighted across the group's runs, also when
    the provider counts more tokens than the host (a calibrated token scale)."""
    from contextlab import CacheObserver
    from contextlab.cache.profiles import make_profile

    profile = make_profile("anthropic:claude-sonnet-5-5", token_scale=1.3)
    result = bench(
        [tool_conversation(8, 1_800, seed=0, name="a"), tool_conversation(12, 900, seed=3, name="b")],
        ["passthrough"],
        settings=HostSettings(context_length=40_000),
        observers=[CacheObserver([profile])],
        progress=False,
    )
    runs = result.summaries
    per_run = engine_table(runs, by=("transcript", "engine", "params"))
    assert per_run["cache_hit_rate"].tolist() == [round(v, 4) for v in runs["cache_hit_rate"]]
    seen = runs["cache_read_tokens_total"] + runs["cache_write_tokens_total"] + runs["uncached_tokens_total"]
    assert (seen > runs["prompt_tokens_total"]).all()  # the provider's count, not the host's
    pooled = engine_table(runs)["cache_hit_rate"].item()
    assert pooled == round(runs["cache_read_tokens_total"].sum() / seen.sum(), 4)
    assert runs["cache_hit_rate"].min() < pooled < runs["cache_hit_rate"].max()
    older = runs.copy()
    older.loc[0, "uncached_tokens_total"] = float("nan")  # a run stored before the column existed
    expected = runs["cache_read_tokens_total"].sum() / (seen.iloc[1] + runs["prompt_tokens_total"].iloc[0])
    assert engine_table(older)["cache_hit_rate"].item() == round(expected, 4)
