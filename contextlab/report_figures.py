"""The report's figures that ``contextlab.plots`` does not draw: prefix-break timeline and retention curves,
plus the per-transcript panel that stacks every per-request view of one transcript.

Columns added by other observers (``fact_retention``, ``cost_usd``, cache columns) are read by name
and their panels are left out when a trace does not have them.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from contextlab.plots import plot_cache_hit_rate, plot_cumulative, plot_prompt_tokens

RUN_KEYS = ["engine", "params"]


def _runs(rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per run, in first-seen order; the label drops params when only one set is present."""
    keys = list(dict.fromkeys(zip(rows["engine"].astype(str), rows["params"].astype(str), strict=True)))
    one_params = len({p for _, p in keys}) <= 1
    out = []
    for engine, params in keys:
        run = rows[(rows["engine"].astype(str) == engine) & (rows["params"].astype(str) == params)]
        out.append((engine if one_params else f"{engine} ({params})", run))
    return out


def prefix_breaks(run: pd.DataFrame) -> pd.DataFrame:
    """The requests of one run whose prompt did not extend the previous one, with the tokens re-sent."""
    previous_messages = run["n_messages"].shift(1)
    previous_tokens = run["prompt_tokens"].shift(1)
    broken = run[(run["prefix_messages"] < previous_messages)].copy()
    broken["tokens_lost"] = (previous_tokens.loc[broken.index] - broken["prefix_tokens"]).clip(lower=0)
    return broken


def plot_prefix_breaks(
    rows: pd.DataFrame, ax: Axes, title: str = "prefix breaks (marker area: tokens re-sent)"
) -> None:
    """One lane per run, a marker at each request whose prompt prefix broke, sized by the tokens lost."""
    runs = _runs(rows)
    biggest = max((float(prefix_breaks(run)["tokens_lost"].max() or 0) for _, run in runs), default=0.0) or 1.0
    for lane, (label, run) in enumerate(runs):
        broken = prefix_breaks(run)
        sizes = 10 + 190 * broken["tokens_lost"].astype(float) / biggest
        ax.scatter(broken["request"], [lane] * len(broken), s=sizes, alpha=0.6, label=label)
    ax.set_yticks(range(len(runs)), [label for label, _ in runs], fontsize="small")
    ax.set_ylim(-0.7, len(runs) - 0.3)
    ax.set_xlabel("request")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)


def plot_retention(
    rows: pd.DataFrame, ax: Axes, title: str = "fact retention (planted facts still in the request)"
) -> None:
    """``fact_retention`` per request, one line per run."""
    for label, run in _runs(rows):
        ax.plot(run["request"], run["fact_retention"].astype(float), label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("request")
    ax.set_ylabel("share of facts seen so far")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")


def transcript_panel(trace: pd.DataFrame, compactions: pd.DataFrame | None, transcript: str) -> Figure:
    """Every per-request view of one transcript, stacked: tokens (thresholds, compactions), cache hit
    rate, cumulative cost, prefix breaks, retention (the last two when the trace has their columns)."""
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
        plot_retention(rows, axes[4])
    figure.suptitle(transcript)
    return figure
