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
    out: dict[str, Any] = {}
    passes = compactions[compactions["trigger"] != "prune"] if len(compactions) else compactions
    committed = passes[passes["outcome"] == "committed"] if len(passes) else passes
    span_s = float(trace["timestamp"].max() - trace["timestamp"].min()) if len(trace) > 1 else 0.0
    hours = span_s / 3600
    out["diag.virtual_hours"] = hours
    out["diag.compactions_per_hour"] = len(committed) / hours if hours > 0 else math.nan
    requests = sorted(int(r) for r in committed["request"]) if len(committed) else []
    gaps = [b - a for a, b in itertools.pairwise(requests)]
    out["diag.requests_between_compactions_mean"] = sum(gaps) / len(gaps) if gaps else math.nan
    out["diag.requests_between_compactions_min"] = min(gaps) if gaps else math.nan
    freed: list[float] = []
    for before, after in zip(committed.get("tokens_before", []), committed.get("tokens_after", []), strict=False):
        freed.append(1 - after / before if before else 0.0)
    out["diag.freed_share_mean"] = sum(freed) / len(freed) if freed else math.nan
    out["diag.freed_tokens_mean"] = (
        float((committed["tokens_before"] - committed["tokens_after"]).mean()) if len(committed) else math.nan
    )
    out["diag.freed_share_trend"] = _slope(freed)
    no_progress = 0
    if len(passes):
        shrunk = (passes["tokens_after"] < PROGRESS_RATIO * passes["tokens_before"]) | (
            passes["messages_after"] < passes["messages_before"]
        )
        no_progress = int(((passes["outcome"] != "committed") | ~shrunk).sum())
    out["diag.passes_without_progress"] = no_progress
    cap_hits = 0
    if len(passes):
        turns = passes["turn"].to_numpy()
        per_turn: np.ndarray
        if turns.dtype.kind in "iu":  # passes per turn by one sort (a groupby costs milliseconds)
            per_turn = np.unique(turns, return_counts=True)[1]
        else:
            per_turn = passes.groupby("turn").size().to_numpy()
        cap_hits = int((per_turn >= max_attempts).sum())
    out["diag.attempt_cap_hits"] = cap_hits
    out["diag.never_under_threshold"] = _never_under(trace) if len(passes) else False
    return out


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
    over = trace["prompt_tokens"] >= trace["threshold_tokens"]
    if not over.any():
        return False
    first = int(over.to_numpy().argmax())
    return bool(over.iloc[first:].all())
