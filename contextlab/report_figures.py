"""The report's figures that ``contextlab.plots`` does not draw: the prefix-break timeline, plus the
per-transcript panel that stacks every per-request view of one transcript.

Columns added by other observers (``fact_retention``, ``cost_usd``, cache columns) are read by name
and their panels are left out when a trace does not have them.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from contextlab.host.trace import prefix_broken
from contextlab.plots import (
    plot_cache_hit_rate,
    plot_cumulative,
    plot_fact_retention,
    plot_prompt_tokens,
    run_groups,
    run_labels,
)


def prefix_breaks(run: pd.DataFrame) -> pd.DataFrame:
    """The requests of one run whose prompt did not extend the previous sent one (the breaks the
    summary's ``prefix_breaks`` counts), with the tokens re-sent."""
    broken = run[prefix_broken(run)].copy()
    previous_tokens = run["prompt_tokens"].shift(1)
    broken["tokens_lost"] = (previous_tokens.loc[broken.index] - broken["prefix_tokens"]).clip(lower=0)
    return broken


def plot_prefix_breaks(
    rows: pd.DataFrame, ax: Axes, title: str = "prefix breaks (marker area: tokens re-sent)"
) -> None:
    """One lane per run, a marker at each request whose prompt prefix broke, sized by the tokens lost."""
    labels = run_labels(rows)
    runs = [(labels[key], run) for key, run in run_groups(rows)]
    breaks = [prefix_breaks(run) for _, run in runs]
    # A run without breaks has no maximum (NaN): it must not decide the scale of the others' markers.
    biggest = max((float(b["tokens_lost"].max()) for b in breaks if len(b)), default=0.0) or 1.0
    for lane, ((label, _), broken) in enumerate(zip(runs, breaks, strict=True)):
        if not len(broken):
            continue  # nothing to mark: the lane stays, bare
        sizes = 10 + 190 * broken["tokens_lost"].astype(float) / biggest
        ax.scatter(broken["request"], [lane] * len(broken), s=sizes.to_numpy(), alpha=0.6, label=label)
    ax.set_yticks(range(len(runs)), [label for label, _ in runs], fontsize="small")
    ax.set_ylim(-0.7, len(runs) - 0.3)
    ax.set_xlabel("request")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)


def transcript_panel(trace: pd.DataFrame, compactions: pd.DataFrame | None, transcript: str) -> Figure:
    """Every per-request view of one transcript, stacked: tokens (thresholds, compactions), cache hit
    rate, cumulative cost, prefix breaks, retention (the last when the trace has its column)."""
    rows = trace[trace["transcript"].astype(str) == transcript]
    has_retention = "fact_retention" in rows.columns and rows["fact_retention"].notna().any()
    has_cost = "cost_usd" in rows.columns and rows["cost_usd"].notna().any()
    panels = 4 + int(has_retention)
    figure = Figure(figsize=(11.0, 3.2 * panels), layout="constrained")
    axes = list(figure.subplots(panels, 1))
    plot_prompt_tokens(trace, compactions, transcript=transcript, ax=axes[0], title="prompt tokens per request")
    plot_cache_hit_rate(trace, transcript=transcript, ax=axes[1], title="cache hit rate per request")
    plot_cumulative(
        trace,
        column="cost_usd" if has_cost else "prompt_tokens",
        transcript=transcript,
        ax=axes[2],
        title="cumulative cost" if has_cost else "cumulative prompt tokens",
    )
    plot_prefix_breaks(rows, axes[3])
    if has_retention:
        title = "fact retention (planted facts still in the request)"
        plot_fact_retention(trace, transcript=transcript, ax=axes[4], title=title)
    figure.suptitle(transcript)
    return figure
