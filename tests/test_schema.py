"""The frame schema (issue 15 item 4): every column a replay writes is declared, with the right type;
the summary the report computes from saved frames is the replay's; the README and docs agree with it."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from contextlab import schema
from contextlab.api import replay
from contextlab.cache.observer import CacheObserver
from contextlab.host.trace import (
    COMPACTION_COLUMNS,
    HOST_LOOP_COUNTS,
    TRACE_COLUMNS,
    ReplayResult,
    observed_from_trace,
    summaries_from_frames,
    write_frame,
)
from contextlab.schema import RunSummary

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def result() -> ReplayResult:
    """A run that fills every observer: two cache profiles, the measurement probe, compactions."""
    cache = CacheObserver(["anthropic:claude-sonnet-5-5", "openai:gpt-5.5"])
    return replay(
        ROOT / "datasets" / "coding-agent-short.jsonl.gz", "compressor", context_length=16_000, observers=[cache]
    )


def test_every_column_of_a_full_replay_is_declared(result: ReplayResult) -> None:
    assert result.status == "ok" and len(result.compactions)
    assert schema.undeclared("trace", result.trace.columns) == []
    assert schema.undeclared("compactions", result.compactions.columns) == []
    assert schema.undeclared("summary", result.summary) == []
    for name in ("probes", "compaction_diff", "compaction_items", "faithfulness"):
        assert len(result.frames[name].columns) and schema.undeclared(name, result.frames[name].columns) == []
    assert list(result.trace.columns[: len(TRACE_COLUMNS)]) == TRACE_COLUMNS
    assert list(result.compactions.columns) == COMPACTION_COLUMNS
    assert "openai.cost_usd" in result.trace.columns  # the second profile's prefixed family


def _kind(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str" if isinstance(value, str) else type(value).__name__


ACCEPTS = {"int": {"int"}, "float": {"float", "int"}, "bool": {"bool"}, "str": {"str"}}


@pytest.mark.parametrize("frame", list(schema.FRAMES))
def test_values_have_their_declared_type(result: ReplayResult, frame: schema.Frame) -> None:
    tables = {"trace": result.trace, "compactions": result.compactions, "summary": result.summary_frame()}
    table = tables.get(frame, result.frames.get(frame))
    assert table is not None
    # The fixture's summaries raise no faithfulness finding; every other frame must have rows to check.
    assert len(table) or frame == "faithfulness", f"the fixture run has no {frame} rows"
    for name in table.columns:
        declared = schema.column(frame, str(name))
        values = [v for v in table[name].tolist() if _kind(v) is not None]
        if declared.dtype == "int" and all(_kind(v) == "float" and float(v).is_integer() for v in values):
            continue  # whole numbers with gaps: pandas holds an int column with missing values as floats
        kinds = {_kind(v) for v in values}
        assert kinds <= ACCEPTS[declared.dtype], f"{frame}.{name}: declared {declared.dtype}, holds {kinds}"


def test_literal_columns_hold_only_their_values(result: ReplayResult) -> None:
    assert set(result.trace["phase"]) <= set(schema.literal_values(schema.Phase))
    assert set(result.compactions["trigger"]) <= set(schema.literal_values(schema.Trigger))
    assert set(result.compactions["outcome"]) <= set(schema.literal_values(schema.Outcome))
    from contextlab.measure.targets import KINDS

    assert schema.literal_values(schema.TargetKind) == KINDS
    assert set(result.frames["compaction_items"]["outcome"]) <= set(schema.literal_values(schema.ItemOutcome))
    assert set(result.frames["probes"]["kind"]) <= set(KINDS)
    assert result.summary["status"] in schema.literal_values(schema.Status)
    assert {"engine_ms", "duration_ms", "engine_ms_total", "wall_s"} == schema.TIMING


def test_run_summary_round_trips_the_summary_dict(result: ReplayResult) -> None:
    typed = result.run_summary
    assert typed.prompt_tokens_total == result.summary["prompt_tokens_total"] > 0
    assert typed["cache_hit_rate"] == result.summary["cache_hit_rate"]
    assert list(typed.as_dict()) == list(result.summary)  # same keys, same order
    assert typed.as_dict() == result.summary or _nan_equal(typed.as_dict(), result.summary)
    assert set(HOST_LOOP_COUNTS) <= set(schema.SUMMARY_FIELDS)
    with pytest.raises(KeyError):
        typed["no_such_key"]


def _nan_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def same(x: Any, y: Any) -> bool:
        both_nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        return both_nan or x == y

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


def test_the_report_summary_is_the_replays(result: ReplayResult) -> None:
    """What the report computes from saved frames equals what the replay summed up, key for key."""
    rows = summaries_from_frames(result.trace, result.compactions)
    assert len(rows) == 1
    row = rows.iloc[0].to_dict()
    derived = observed_from_trace(result.trace)
    assert {"cache_hit_rate", "cost_usd", "fact_retention_mean", "fact_retention_final"} <= set(derived)
    for key, value in row.items():
        if key in ("model", "threshold_percent", "threshold_note", "engine_ms_total"):
            continue  # the frames do not hold the model name or the setting; timing differs
        expected = result.summary[key]
        assert _nan_equal({key: _plain(value)}, {key: expected}), f"{key}: report {value!r}, replay {expected!r}"


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def test_patterns_and_unknown_names() -> None:
    assert schema.column("trace", "openai:gpt-5.5.cache_read_tokens").name == "<profile>.cache_read_tokens"
    assert schema.column("summary", "fact_retention_final.bug").unit == "share"
    assert schema.column("summary", "facts_reachable_at_3").name == "facts_reachable_at_<n>"
    assert schema.find("trace", "cache_read_tokens_total") is None
    with pytest.raises(KeyError, match="trace column 'nope' is not declared"):
        schema.declared("trace", "prompt_tokens", "nope")
    assert schema.format_value("prefix_share", 0.5) == "50.0%"
    assert schema.format_value("cost_usd", 1.5) == "$1.5000"
    assert schema.format_value("prompt_tokens_total", 12345) == "12,345"
    assert schema.format_value("fact_retention_final", float("nan")) == ""


def test_consumers_show_only_declared_columns() -> None:
    from contextlab import plots, report
    from contextlab.cli import bench as cli_bench
    from contextlab.cli import replay as cli_replay

    table_only = {"rank", "runs", "failed", "flags"}  # the engine table's own columns
    shown = [
        *(c for c, _, _ in plots.ENGINE_TABLE_COLUMNS),
        *(c for c, _ in report.LEADERBOARD_COLUMNS),
        *report.FLAGS,
        *(c for c, _ in cli_replay.SUMMARY_FIELDS),
        *(c for c, _ in cli_bench.COLUMNS),
    ]
    assert schema.undeclared("summary", [c for c in shown if c not in table_only]) == []
    assert set(plots.MARKERS) <= set(schema.literal_values(schema.Trigger))


def test_the_writer_keeps_declared_types_for_empty_columns(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "compress_trigger": [None, None],
            "openai.cache_read_tokens": [1, 2],
            "diag.requests_between_compactions_min": [float("nan"), 3.0],
            "grid_value": ["a", "b"],  # undeclared: Arrow infers it
        }
    )
    table = pq.read_table(write_frame(frame, tmp_path / "f.parquet"))
    types = {name: str(table.schema.field(name).type) for name in table.schema.names}
    assert types == {
        "compress_trigger": "string",
        "openai.cache_read_tokens": "int64",
        "diag.requests_between_compactions_min": "int64",
        "grid_value": types["grid_value"],
    }
    assert types["grid_value"] in ("string", "large_string")
    assert table.column("diag.requests_between_compactions_min").to_pylist() == [None, 3]
    # A name two frames declare differently takes its frame's type: the summary's count stays a count.
    counts = pd.DataFrame({"select_context_used": [3, 0]})
    assert pq.read_table(write_frame(counts, tmp_path / "s.parquet", "summary")).column(0).to_pylist() == [3, 0]
    assert pq.read_table(write_frame(counts.astype(bool), tmp_path / "t.parquet", "trace")).column(0).type == "bool"


def test_readme_trace_table_lists_the_declared_trace_columns() -> None:
    section = README.split("## The trace", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    documented = [name for line in table for name in re.findall(r"`([^`]+)`", line.split(" | ")[0])]
    expected = schema.names(schema.HOST_TRACE) + schema.names(schema.CACHE_TRACE) + schema.names(schema.PROBE_TRACE)
    assert sorted(documented) == sorted(expected)
    outcomes = re.search(r"outcome\n?\s*((?:`\w+` / )+`\w+`)", section.replace("\n", " "))
    assert outcomes is not None
    assert re.findall(r"`(\w+)`", outcomes.group(1)) == list(schema.literal_values(schema.Outcome))
    phases = re.findall(r"`phase`: `(\w+)` or `(\w+)`", section)
    assert phases and list(phases[0]) == list(schema.literal_values(schema.Phase))


def test_docs_tables_are_generated_from_the_schema() -> None:
    """``docs/frames.md`` holds :func:`schema.markdown_table` of each frame, verbatim."""
    text = (ROOT / "docs" / "frames.md").read_text(encoding="utf-8")
    for frame, block in schema.generated_tables().items():
        # Regenerate with `python -m contextlab.schema` and paste the block.
        assert block in text, f"docs/frames.md: the {frame} table is missing or stale"


def test_schema_is_light() -> None:
    code = "import sys, contextlab.schema; print(sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_run_summary_of_a_failed_sweep_cell_has_every_field() -> None:
    typed = RunSummary("t", "e", "p", status="timeout", error="stopped")
    row = typed.as_dict()
    assert list(row)[: len(schema.SUMMARY_FIELDS) - 1] == list(schema.SUMMARY_FIELDS[:-1])
    assert "wall_s" not in row and RunSummary.from_dict({**row, "x": 1}).observed == {"x": 1}
