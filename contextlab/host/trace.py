"""The per-request trace, the compaction-event frame and the run summary: the tables everything reads."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.errors import ConfigError

TRACE_COLUMNS: list[str] = [
    "transcript",
    "engine",
    "params",
    "turn",
    "request",
    "phase",
    "timestamp",
    "n_messages",
    "prompt_tokens",
    "prompt_tokens_rough",
    "pressure_tokens",
    "usage_model",
    "usage_prompt_tokens",
    "completion_tokens",
    "threshold_tokens",
    "context_length",
    "over_threshold",
    "compressed",
    "compress_trigger",
    "compression_count",
    "pruned",
    "select_context_used",
    "select_context_rejected",
    "prefix_tokens",
    "prefix_messages",
    "violations",
    "violation_rules",
    "overflow",
    "engine_ms",
    "sent",
    "exit_reason",
    "retries",
    "usage_reported",
    "invalid_results",
    "engine_tool_results",
    "session_event",
]
"""Core columns, in order. Observers (cache model, probes) append theirs after these."""

COMPACTION_COLUMNS: list[str] = [
    "transcript",
    "engine",
    "params",
    "turn",
    "request",
    "trigger",
    "focus_topic",
    "outcome",
    "reason",
    "tokens_before",
    "tokens_after",
    "messages_before",
    "messages_after",
    "summary_tokens",
    "duration_ms",
]
"""One row per compaction or prune pass, committed or not (``outcome`` says which)."""

TIMING_COLUMNS: frozenset[str] = frozenset({"engine_ms", "duration_ms", "wall_s", "engine_ms_total"})
"""Trace, compaction and summary columns that measure wall time; everything else is deterministic
for a given input and seed."""


@dataclass
class ReplayResult:
    """The outcome of one replay: trace, compaction events and summary.

    ``status`` is ``"ok"`` or ``"failed"``; a failed run keeps the rows recorded before the failure
    and says why in ``error``.
    """

    trace: pd.DataFrame
    compactions: pd.DataFrame
    summary: dict[str, Any]
    status: str = "ok"
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    engine: Any = field(default=None, repr=False, compare=False)
    """The engine instance this run used (its own clone), for inspection after the replay."""

    def summary_frame(self) -> pd.DataFrame:
        """The summary as a one-row frame."""
        return pd.DataFrame([self.summary])

    def write(self, path: str | Path) -> Path:
        """Write the trace as CSV or Parquet (by extension), atomically."""
        return write_frame(self.trace, path)


def build_frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A frame with ``columns`` first (in order) and any extra observer columns after them."""
    extra: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns and key not in extra:
                extra.append(key)
    return pd.DataFrame(rows, columns=columns + extra)


def summarize(
    trace: pd.DataFrame, compactions: pd.DataFrame, base: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    """The run summary. Keys are stable; counts are ints, shares are floats in [0, 1]."""
    n = len(trace)
    committed = compactions[compactions["outcome"] == "committed"] if len(compactions) else compactions
    compaction_rows = committed[committed["trigger"] != "prune"] if len(committed) else committed
    prompt_total = int(trace["prompt_tokens"].sum()) if n else 0
    prefix_total = int(trace["prefix_tokens"].sum()) if n else 0
    summary: dict[str, Any] = {
        **base,
        "requests": n,
        "turns": int(trace["turn"].nunique()) if n else 0,
        "compactions": len(compaction_rows),
        "compaction_attempts": int((compactions["trigger"] != "prune").sum()) if len(compactions) else 0,
        "prunes": int((committed["trigger"] == "prune").sum()) if len(committed) else 0,
        "prompt_tokens_total": prompt_total,
        "prompt_tokens_max": int(trace["prompt_tokens"].max()) if n else 0,
        "prompt_tokens_mean": float(trace["prompt_tokens"].mean()) if n else 0.0,
        "prompt_tokens_rough_total": int(trace["prompt_tokens_rough"].sum()) if n else 0,
        "completion_tokens_total": int(trace["completion_tokens"].sum()) if n else 0,
        "prefix_tokens_total": prefix_total,
        "prefix_share": (prefix_total / prompt_total) if prompt_total else 0.0,
        "prefix_breaks": int(_prefix_breaks(trace)),
        "violations": int(trace["violations"].sum()) if n else 0,
        "overflows": int(trace["overflow"].sum()) if n else 0,
        "select_context_used": int(trace["select_context_used"].sum()) if n else 0,
        "engine_ms_total": float(trace["engine_ms"].sum()) if n else 0.0,
        **host_loop_counts(trace, compactions),
    }
    summary.update(extra)
    return summary


HOST_LOOP_COUNTS: tuple[str, ...] = (
    "invalid_results",
    "compression_timeouts",
    "requests_not_sent",
    "retries",
    "responses_without_usage",
    "engine_tool_results",
    "session_boundaries",
)
"""Summary keys of :func:`host_loop_counts`."""


def host_loop_counts(trace: pd.DataFrame, compactions: pd.DataFrame) -> dict[str, int]:
    """Summary counts of the host-loop semantics (``docs/host-loop.md``); traces written before these
    columns existed count as zero."""
    n = len(trace)

    def total(column: str) -> int:
        return int(pd.to_numeric(trace[column], errors="coerce").fillna(0).sum()) if n and column in trace else 0

    invalid = total("invalid_results")
    timeouts = 0
    if len(compactions) and "outcome" in compactions:
        # Invalid passes recorded after the last request have no trace row to carry them.
        late = compactions["request"] >= n if "request" in compactions else compactions["outcome"] == ""
        invalid += int(((compactions["outcome"] == "invalid") & late).sum())
        timeouts = int((compactions["outcome"] == "timeout").sum())
    unsent = _unsent(trace)
    no_usage = 0
    if n and "usage_reported" in trace:
        no_usage = int(((trace["usage_reported"] == False) & ~unsent).sum())  # noqa: E712
    return {
        "invalid_results": invalid,
        "compression_timeouts": timeouts,
        "requests_not_sent": int(unsent.sum()),
        "retries": total("retries"),
        "responses_without_usage": no_usage,
        "engine_tool_results": total("engine_tool_results"),
        "session_boundaries": int(trace["session_event"].notna().sum()) if n and "session_event" in trace else 0,
    }


def _unsent(trace: pd.DataFrame) -> pd.Series:
    """Rows of requests the host never sent (their turn ended early)."""
    if "sent" not in trace:
        return pd.Series(False, index=trace.index)
    return trace["sent"] == False  # noqa: E712


def _prefix_breaks(trace: pd.DataFrame) -> int:
    """Requests (after the first) that did not extend the previous sent request's full message list."""
    trace = trace[~_unsent(trace)]
    if len(trace) < 2:
        return 0
    previous = trace["n_messages"].shift(1)
    broken = trace["prefix_messages"] < previous
    return int(broken.iloc[1:].sum())


def write_frame(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``.csv`` or ``.parquet`` atomically (a temporary file renamed into place)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ConfigError(f"{path}: unsupported output type {suffix or '(none)'}; use .csv or .parquet")
    if not path.parent.exists():
        raise ConfigError(f"{path}: folder {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".csv":
        frame.to_csv(tmp, index=False)
    else:
        frame.to_parquet(tmp, index=False)
    tmp.replace(path)
    return path


def summary_json(summary: dict[str, Any]) -> str:
    """The summary as one JSON object (NaN becomes null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if hasattr(value, "item"):
            return value.item()
        return value

    return json.dumps({k: clean(v) for k, v in summary.items()}, sort_keys=False)
