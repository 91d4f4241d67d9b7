"""Engine diagnostics from the trace and compaction frames (runaway compaction, engines.md §6 Q10).

All values come from the two frames alone, so a report can recompute them from saved files.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

PROGRESS_RATIO = 0.95
"""A pass made progress when it left under 95% of the tokens (the host's rule)."""


def engine_diagnostics(trace: pd.DataFrame, compactions: pd.DataFrame, max_attempts: int = 3) -> dict[str, Any]:
    """``diag.*`` summary values for one run (``docs/metrics.md`` §Diagnostics)."""
    # The compaction frame has a row a pass: its columns are read once as arrays and filtered by
    # masks (a frame filtered by a mask and read column by column cost about 1 ms a run).
    passes = _Passes(compactions)
    out: dict[str, Any] = {}
    stamps = trace["timestamp"].to_numpy()  # arrays: a pandas reduction costs tens of microseconds
    span_s = float(stamps.max() - stamps.min()) if len(trace) > 1 else 0.0
    hours = span_s / 3600
    committed = passes.committed
    out["diag.virtual_hours"] = hours
    out["diag.compactions_per_hour"] = int(committed.sum()) / hours if hours > 0 else math.nan
    requests = sorted(passes.column("request", committed).tolist())
    gaps = [b - a for a, b in itertools.pairwise(requests)]
    out["diag.requests_between_compactions_mean"] = sum(gaps) / len(gaps) if gaps else math.nan
    out["diag.requests_between_compactions_min"] = min(gaps) if gaps else math.nan
    before, after = passes.column("tokens_before", committed), passes.column("tokens_after", committed)
    freed = [1 - a / b if b else 0.0 for b, a in zip(before.tolist(), after.tolist(), strict=True)]
    out["diag.freed_share_mean"] = sum(freed) / len(freed) if freed else math.nan
    out["diag.freed_tokens_mean"] = float((before - after).mean()) if len(before) else math.nan
    out["diag.freed_share_trend"] = _slope(freed)
    every = passes.every
    no_progress = 0
    if every.any():
        shrunk = (passes.column("tokens_after", every) < PROGRESS_RATIO * passes.column("tokens_before", every)) | (
            passes.column("messages_after", every) < passes.column("messages_before", every)
        )
        no_progress = int((~committed[every] | ~shrunk).sum())
    out["diag.passes_without_progress"] = no_progress
    cap_hits = 0
    if every.any():
        turns = passes.column("turn", every)
        per_turn: np.ndarray
        if turns.dtype.kind in "iu":  # passes per turn by one sort (a groupby costs milliseconds)
            per_turn = np.unique(turns, return_counts=True)[1]
        else:
            per_turn = compactions[every].groupby("turn").size().to_numpy()
        cap_hits = int((per_turn >= max_attempts).sum())
    out["diag.attempt_cap_hits"] = cap_hits
    out["diag.never_under_threshold"] = _never_under(trace) if every.any() else False
    return out


class _Passes:
    """The compaction frame's passes (every row but the host's prunes) as arrays."""

    def __init__(self, compactions: pd.DataFrame) -> None:
        self._frame = compactions
        n = len(compactions)
        self.every: np.ndarray = compactions["trigger"].to_numpy() != "prune" if n else np.zeros(0, dtype=bool)
        """Which rows are passes (a prune is the host's, not the engine's)."""
        self.committed: np.ndarray = (
            self.every & (compactions["outcome"].to_numpy() == "committed") if n else self.every
        )
        """Which rows are passes the host committed."""

    def column(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Column ``name`` at ``rows`` (a mask)."""
        if not len(self._frame):
            return np.zeros(0, dtype=np.int64)
        selected: np.ndarray = self._frame[name].to_numpy()[rows]
        return selected


def _slope(values: list[float]) -> float:
    """Least-squares slope of ``values`` against their index (freed share lost per compaction)."""
    n = len(values)
    if n < 2:
        return math.nan
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


def _never_under(trace: pd.DataFrame) -> bool:
    """Once over the threshold, no later request of the run got under it again (despite passes)."""
    over = trace["prompt_tokens"].to_numpy() >= trace["threshold_tokens"].to_numpy()
    if not over.any():
        return False
    first = int(over.argmax())
    return bool(over[first:].all())
