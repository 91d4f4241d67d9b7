"""The per-request trace, the compaction-event frame and the run summary: the tables everything reads."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextlab import schema
from contextlab.frame_io import write_frame as write_frame
from contextlab.schema import RunSummary

TRACE_COLUMNS: list[str] = schema.names(schema.HOST_TRACE)
"""Core columns, in order (declared in :mod:`contextlab.schema`). Observers (cache model, probes) append
theirs after these."""

COMPACTION_COLUMNS: list[str] = schema.names(schema.COMPACTIONS)
"""One row per compaction or prune pass, committed or not (``outcome`` says which)."""

TIMING_COLUMNS: frozenset[str] = schema.TIMING
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
    frames: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False, compare=False)
    """Long-form tables from the measurement observers (``probes``, ``compaction_diff``, ...;
    ``docs/metrics.md``)."""

    @property
    def probes(self) -> pd.DataFrame | None:
        """The ``probes`` frame: per request and target group, eligible / in context / recoverable."""
        return self.frames.get("probes")

    @property
    def run_summary(self) -> RunSummary:
        """The summary, typed (:class:`~contextlab.schema.RunSummary`)."""
        return RunSummary.from_dict(self.summary)

    def summary_frame(self) -> pd.DataFrame:
        """The summary as a one-row frame."""
        return pd.DataFrame([self.summary])

    def write(self, path: str | Path) -> Path:
        """Write the trace as CSV or Parquet (by extension), atomically."""
        return write_frame(self.trace, path, "trace")


def build_frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A frame with ``columns`` first (in order) and any extra observer columns after them."""
    if not rows:
        # Most runs record no compaction: a copy of one empty frame per column set costs 1% of
        # building it (0.6 ms, 2% of a short session's tokenization).
        return _empty_frame(tuple(columns)).copy(deep=True)
    known = set(columns)
    extra: list[str] = []
    for row in rows:
        if row.keys() <= known:  # one C-level set test per row: rows mostly share their keys
            continue
        for key in row:
            if key not in known:
                known.add(key)
                extra.append(key)
    return pd.DataFrame(rows, columns=columns + extra)


@functools.lru_cache(maxsize=16)
def _empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([], columns=list(columns))


def summarize(
    trace: pd.DataFrame, compactions: pd.DataFrame, base: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    """The run summary as a dict (:meth:`RunSummary.as_dict`). ``base`` holds the run's labels and setup
    (:class:`RunSummary` fields), ``extra`` the observers' keys; counts are ints, shares floats in [0, 1]."""
    return run_summary(trace, compactions, base, extra).as_dict()


def run_summary(
    trace: pd.DataFrame, compactions: pd.DataFrame, base: dict[str, Any], extra: dict[str, Any]
) -> RunSummary:
    """The run summary computed from the trace and compaction frames (see :func:`summarize`)."""
    n = len(trace)
    committed = compactions[compactions["outcome"] == "committed"] if len(compactions) else compactions
    compaction_rows = committed[committed["trigger"] != "prune"] if len(committed) else committed
    prompt = _values(trace, "prompt_tokens") if n else None
    prompt_total = int(prompt.sum()) if prompt is not None else 0
    prefix_total = _total(trace, "prefix_tokens")
    summary = RunSummary(
        **base,
        requests=n,
        turns=int(trace["turn"].nunique()) if n else 0,
        compactions=len(compaction_rows),
        compaction_attempts=int((compactions["trigger"] != "prune").sum()) if len(compactions) else 0,
        prunes=int((committed["trigger"] == "prune").sum()) if len(committed) else 0,
        prompt_tokens_total=prompt_total,
        prompt_tokens_max=int(prompt.max()) if prompt is not None else 0,
        prompt_tokens_mean=float(prompt.mean()) if prompt is not None else 0.0,
        prompt_tokens_rough_total=_total(trace, "prompt_tokens_rough"),
        completion_tokens_total=_total(trace, "completion_tokens"),
        prefix_tokens_total=prefix_total,
        prefix_share=(prefix_total / prompt_total) if prompt_total else 0.0,
        prefix_breaks=int(prefix_broken(trace).sum()),
        violations=_total(trace, "violations"),
        overflows=_total(trace, "overflow"),
        select_context_used=_total(trace, "select_context_used"),
        engine_ms_total=float(trace["engine_ms"].sum()) if n else 0.0,
        observed=dict(extra),
    )
    for key, value in host_loop_counts(trace, compactions).items():
        setattr(summary, key, value)
    return summary


def _values(trace: pd.DataFrame, column: str) -> Any:
    """The column as a numpy array when it holds ints or bools (numpy's sum, max and mean give what
    pandas' give there, at a tenth of the cost on a short run), else the pandas column."""
    series = trace[column]
    values = series.to_numpy()
    return values if values.dtype.kind in "iub" else series


def _total(trace: pd.DataFrame, column: str) -> int:
    return int(_values(trace, column).sum()) if len(trace) else 0


RUN_KEYS: tuple[str, ...] = schema.declared("trace", "transcript", "engine", "params")
"""The columns that identify one run in a long frame."""


def summaries_from_frames(trace: pd.DataFrame, compactions: pd.DataFrame | None = None) -> pd.DataFrame:
    """One summary row per (transcript, engine, params) run of saved frames, the way the replay summed
    it up: :func:`run_summary` plus the observer keys the trace's columns determine
    (:func:`observed_from_trace`). What the frames cannot tell (the model name, the measurement
    probe's other keys) is left out."""
    events = compactions if compactions is not None else pd.DataFrame(columns=COMPACTION_COLUMNS)
    keys = list(RUN_KEYS)
    rows = []
    for key, run in trace.groupby(keys, sort=False):
        mask = pd.Series(True, index=events.index)
        for column, value in zip(keys, key, strict=True):
            mask &= events[column].astype(str) == str(value)
        run = run.reset_index(drop=True)
        base: dict[str, Any] = dict(zip(keys, key, strict=True))
        if len(run):
            base["context_length"] = int(run["context_length"].iloc[-1])
            base["threshold_tokens"] = int(run["threshold_tokens"].iloc[-1])
        extra = observed_from_trace(run)
        rows.append(summarize(run, events[mask].reset_index(drop=True), base, extra))
    return pd.DataFrame(rows)


def observed_from_trace(run: pd.DataFrame) -> dict[str, Any]:
    """The summary keys of the cache observer and the retention probe that one run's trace columns
    determine, computed as the observers compute them (same order of additions, so equal floats)."""
    out: dict[str, Any] = {}
    if {"cache_read_tokens", "cache_write_tokens", "uncached_tokens"} <= set(run.columns):
        read, write, uncached = (
            _running_sum(run[c]) for c in ("cache_read_tokens", "cache_write_tokens", "uncached_tokens")
        )
        total = read + write + uncached
        out["cache_hit_rate"] = read / total if total else 0.0
        out["cache_write_share"] = write / total if total else 0.0
        out["cache_read_tokens_total"] = int(read)
        out["cache_write_tokens_total"] = int(write)
        out["uncached_tokens_total"] = int(uncached)
    if "cost_usd" in run.columns:
        out["cost_usd"] = _running_sum(run["cost_usd"])
    if {"facts_eligible", "facts_in_context", "fact_retention"} <= set(run.columns) and len(run):
        eligible = pd.to_numeric(run["facts_eligible"], errors="coerce").fillna(0)
        retentions = [float(v) for v, e in zip(run["fact_retention"], eligible, strict=True) if e > 0]
        last_eligible, last_present = int(eligible.iloc[-1]), int(run["facts_in_context"].iloc[-1])
        out["fact_retention_mean"] = sum(retentions) / len(retentions) if retentions else math.nan
        out["fact_retention_final"] = last_present / last_eligible if last_eligible else math.nan
    return out


def _running_sum(values: pd.Series) -> float:
    """Left-to-right float sum (what an observer's ``total += value`` gives; NaN stays NaN)."""
    total = 0.0
    for value in pd.to_numeric(values, errors="coerce"):
        total += float(value)
    return total


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
        if not n or column not in trace:
            return 0
        values = trace[column]
        if values.dtype.kind in "iu":  # the replay's own columns: nothing to coerce (saves 3 passes)
            return int(values.sum())
        return int(pd.to_numeric(values, errors="coerce").fillna(0).sum())

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


def prefix_broken(trace: pd.DataFrame) -> pd.Series:
    """Per row of one run: a sent request (after the first sent one) that did not extend the previous
    sent request's full message list. Unsent rows are never breaks (the provider saw nothing)."""
    sent = ~_unsent(trace)
    if len(trace) >= 2 and bool(sent.all()):
        sizes, shared = trace["n_messages"].to_numpy(), trace["prefix_messages"].to_numpy()
        if sizes.dtype.kind in "iu" and shared.dtype.kind in "iu":
            # Every request sent (a replay's usual trace): the comparison below without a filtered copy.
            flags = np.zeros(len(trace), dtype=bool)
            flags[1:] = shared[1:] < sizes[:-1]
            return pd.Series(flags, index=trace.index)
    rows = trace[sent]
    broken = pd.Series(False, index=trace.index)
    if len(rows) < 2:
        return broken
    previous = rows["n_messages"].shift(1)
    broken.loc[rows.index[1:]] = (rows["prefix_messages"] < previous).iloc[1:].to_numpy()
    return broken


def summary_json(summary: dict[str, Any]) -> str:
    """The summary as one JSON object (NaN becomes null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if hasattr(value, "item"):
            return value.item()
        return value

    return json.dumps({k: clean(v) for k, v in summary.items()}, sort_keys=False)
