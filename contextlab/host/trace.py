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
from contextlab.thresholds import window_note

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
    return frame_and_arrays(rows, columns)[0]


def frame_and_arrays(rows: list[dict[str, Any]], columns: list[str]) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """:func:`build_frame`, and the numpy columns it was built from when it was built by column (the
    run summary reads those instead of taking each column back out of the frame)."""
    if not rows:
        # Most runs record no compaction: a copy of one empty frame per column set costs 1% of
        # building it (0.6 ms, 2% of a short session's tokenization).
        return _empty_frame(tuple(columns)).copy(deep=True), None
    known = set(columns)
    extra: list[str] = []
    for row in rows:
        if row.keys() <= known:  # one C-level set test per row: rows mostly share their keys
            continue
        for key in row:
            if key not in known:
                known.add(key)
                extra.append(key)
    index = _column_index(tuple(columns + extra))
    typed = _typed_columns(rows)
    if typed is not None:
        return pd.DataFrame(typed, columns=index), typed
    return pd.DataFrame(rows, columns=index), None


@functools.lru_cache(maxsize=64)
def _column_index(columns: tuple[str, ...]) -> pd.Index:
    # A run's column set recurs replay after replay; building its (immutable) Index from the list
    # cost 0.1 ms per frame, a few percent of a short session's replay.
    return pd.Index(list(columns))


_NUMPY_TYPES: dict[type, type] = {int: np.int64, float: np.float64, bool: np.bool_}


def _typed_columns(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rows as columns when every row has the same keys in the same order (a replay's usual
    trace), with the columns whose values are all ints, all floats or all bools as numpy arrays:
    pandas then infers only the other columns (the dtypes are the ones it would infer; building the
    frame row by row, it inferred every column value by value). None: the rows differ in their keys."""
    keys = list(rows[0])
    if any(list(row) != keys for row in rows):
        return None
    columns: dict[str, Any] = {}
    for key, values in zip(keys, zip(*(row.values() for row in rows), strict=True), strict=True):
        kinds = set(map(type, values))
        dtype = _NUMPY_TYPES.get(kinds.pop()) if len(kinds) == 1 else None
        try:
            columns[key] = np.array(values, dtype=dtype) if dtype is not None else list(values)
        except OverflowError:  # an int beyond int64: pandas decides, as before
            columns[key] = list(values)
    return columns


@functools.lru_cache(maxsize=16)
def _empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([], columns=list(columns))


def summarize(
    trace: pd.DataFrame,
    compactions: pd.DataFrame,
    base: dict[str, Any],
    extra: dict[str, Any],
    arrays: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run summary as a dict (:meth:`RunSummary.as_dict`). ``base`` holds the run's labels and setup
    (:class:`RunSummary` fields), ``extra`` the observers' keys; counts are ints, shares floats in [0, 1].
    ``arrays``: the trace's numpy columns, when :func:`frame_and_arrays` built it from them."""
    return run_summary(trace, compactions, base, extra, arrays).as_dict()


def run_summary(
    trace: pd.DataFrame,
    compactions: pd.DataFrame,
    base: dict[str, Any],
    extra: dict[str, Any],
    arrays: dict[str, Any] | None = None,
) -> RunSummary:
    """The run summary computed from the trace and compaction frames (see :func:`summarize`)."""
    n = len(trace)
    columns = _Columns(trace, arrays)
    committed_compactions = attempts = prunes = 0
    if len(compactions):
        committed = compactions["outcome"].to_numpy() == "committed"
        pruning = compactions["trigger"].to_numpy() == "prune"
        committed_compactions = int((committed & ~pruning).sum())
        attempts = int((~pruning).sum())
        prunes = int((committed & pruning).sum())
    prompt = columns.values("prompt_tokens") if n else None
    prompt_total = int(prompt.sum()) if prompt is not None else 0
    prefix_total = columns.total("prefix_tokens")
    summary = RunSummary(
        **base,
        requests=n,
        turns=columns.distinct("turn"),
        compactions=committed_compactions,
        compaction_attempts=attempts,
        prunes=prunes,
        prompt_tokens_total=prompt_total,
        prompt_tokens_max=int(prompt.max()) if prompt is not None else 0,
        prompt_tokens_mean=float(prompt.mean()) if prompt is not None else 0.0,
        prompt_tokens_rough_total=columns.total("prompt_tokens_rough"),
        completion_tokens_total=columns.total("completion_tokens"),
        prefix_tokens_total=prefix_total,
        prefix_share=(prefix_total / prompt_total) if prompt_total else 0.0,
        prefix_breaks=int(_prefix_broken(columns).sum()),
        violations=columns.total("violations"),
        overflows=columns.total("overflow"),
        select_context_used=columns.total("select_context_used"),
        engine_ms_total=float(trace["engine_ms"].sum()) if n else 0.0,
        observed=dict(extra),
    )
    for key, value in _host_loop_counts(columns, compactions).items():
        setattr(summary, key, value)
    return summary


class _Columns:
    """A trace's columns as numpy arrays, each fetched once. The summary reads some columns three
    times, and one pandas operation per reading cost more than the arithmetic (3 ms of a 70 ms replay)."""

    def __init__(self, trace: pd.DataFrame, arrays: dict[str, Any] | None = None) -> None:
        self.trace = trace
        self.rows = len(trace)
        # The numpy columns the frame was built from are the frame's own values: taken as they are.
        self._arrays: dict[str, np.ndarray] = (
            {k: v for k, v in arrays.items() if isinstance(v, np.ndarray)} if arrays else {}
        )

    def __contains__(self, column: str) -> bool:
        return column in self.trace.columns

    def array(self, column: str) -> np.ndarray:
        found = self._arrays.get(column)
        if found is None:
            found = self._arrays[column] = self.trace[column].to_numpy()
        return found

    def values(self, column: str) -> Any:
        """The column as a numpy array when it holds ints or bools (numpy's sum, max and mean give what
        pandas' give there), else the pandas column (a saved frame's floats and blanks)."""
        values = self.array(column)
        return values if values.dtype.kind in "iub" else self.trace[column]

    def total(self, column: str) -> int:
        return int(self.values(column).sum()) if self.rows else 0

    def coerced_total(self, column: str) -> int:
        """Sum of a host-loop count column; absent in older traces, blanks and text count as zero."""
        if not self.rows or column not in self:
            return 0
        values = self.array(column)
        if values.dtype.kind in "iub":  # the replay's own columns: nothing to coerce
            return int(values.sum())
        return int(pd.to_numeric(self.trace[column], errors="coerce").fillna(0).sum())

    def distinct(self, column: str) -> int:
        if not self.rows:
            return 0
        values = self.array(column)
        if values.dtype.kind in "iub":
            return len(np.unique(values))
        return int(self.trace[column].nunique())

    def unsent(self) -> np.ndarray:
        """Rows of requests the host never sent (their turn ended early)."""
        if "sent" not in self:
            return np.zeros(self.rows, dtype=bool)
        sent = self.array("sent")
        if sent.dtype.kind == "b":
            return ~sent
        return np.asarray(self.trace["sent"] == False, dtype=bool)  # noqa: E712  (a saved frame's column)


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
            base["window_note"] = window_note(base["context_length"]) or ""
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
    "history_repairs",
    "tool_outputs_spilled",
    "tool_loop_notes",
)
"""Summary keys of :func:`host_loop_counts`."""


def host_loop_counts(trace: pd.DataFrame, compactions: pd.DataFrame) -> dict[str, int]:
    """Summary counts of the host-loop semantics (``docs/host-loop.md``); traces written before these
    columns existed count as zero."""
    return _host_loop_counts(_Columns(trace), compactions)


def _host_loop_counts(columns: _Columns, compactions: pd.DataFrame) -> dict[str, int]:
    n = columns.rows
    invalid = columns.coerced_total("invalid_results")
    timeouts = 0
    if len(compactions) and "outcome" in compactions:
        outcome = compactions["outcome"].to_numpy()
        # Invalid passes recorded after the last request have no trace row to carry them.
        late = compactions["request"].to_numpy() >= n if "request" in compactions else outcome == ""
        invalid += int(((outcome == "invalid") & late).sum())
        timeouts = int((outcome == "timeout").sum())
    unsent = columns.unsent()
    no_usage = 0
    if n and "usage_reported" in columns:
        reported = columns.array("usage_reported")
        unreported = ~reported if reported.dtype.kind == "b" else np.asarray(reported == False, dtype=bool)  # noqa: E712
        no_usage = int((unreported & ~unsent).sum())
    boundaries = int(pd.notna(columns.array("session_event")).sum()) if n and "session_event" in columns else 0
    return {
        "invalid_results": invalid,
        "compression_timeouts": timeouts,
        "requests_not_sent": int(unsent.sum()),
        "retries": columns.coerced_total("retries"),
        "responses_without_usage": no_usage,
        "engine_tool_results": columns.coerced_total("engine_tool_results"),
        "session_boundaries": boundaries,
        "history_repairs": columns.coerced_total("history_repairs"),
        "tool_outputs_spilled": columns.coerced_total("tool_outputs_spilled"),
        "tool_loop_notes": columns.coerced_total("tool_loop_notes"),
    }


def prefix_broken(trace: pd.DataFrame) -> pd.Series:
    """Per row of one run: a sent request (after the first sent one) that did not extend the previous
    sent request's full message list. Unsent rows are never breaks (the provider saw nothing)."""
    return pd.Series(_prefix_broken(_Columns(trace)), index=trace.index)


def _prefix_broken(columns: _Columns) -> np.ndarray:
    flags = np.zeros(columns.rows, dtype=bool)
    sent = np.flatnonzero(~columns.unsent())  # positions of the sent rows, in order
    if len(sent) < 2:
        return flags
    sizes, shared = columns.array("n_messages")[sent], columns.array("prefix_messages")[sent]
    flags[sent[1:]] = shared[1:] < sizes[:-1]
    return flags


def summary_json(summary: dict[str, Any]) -> str:
    """The summary as one JSON object (NaN becomes null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if hasattr(value, "item"):
            return value.item()
        return value

    return json.dumps({k: clean(v) for k, v in summary.items()}, sort_keys=False)
