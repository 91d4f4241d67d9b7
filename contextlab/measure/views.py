"""Report views of the measurement layer: break attribution (table + timeline) and compaction diffs.

Each view is built from frames alone, so a report of saved files shows the same thing as one of a
live run. :func:`measure_sections` returns HTML fragments for ``contextlab.report``.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from contextlab.measure.breaks import CAUSES, break_table

DIFF_ITEMS_SHOWN = 15
"""Items listed per compaction in the HTML diff (needed-later first)."""

FINDINGS_SHOWN = 50
"""Summary-faithfulness findings listed in the report (all are counted)."""


TIMELINE_RUNS = 12
"""Runs drawn in the break timeline (a sweep of thousands of runs would make one subplot each)."""

DIFF_COMPACTIONS_SHOWN = 100
"""Compactions listed in the HTML diff (the frames keep every one)."""

_RUN = ["transcript", "engine", "params"]


def _largest_in_order(scores: list[float], limit: int) -> list[int]:
    """Positions of the ``limit`` largest ``scores``, in position order (earlier ones win ties)."""
    return sorted(sorted(range(len(scores)), key=lambda i: -scores[i])[:limit])


Run = tuple[tuple[str, ...], pd.DataFrame]
"""One run of a trace: its (transcript, engine, params) key and its rows."""


def _runs(trace: pd.DataFrame) -> list[Run]:
    return [(tuple(str(k) for k in key), run) for key, run in trace.groupby(_RUN, sort=False)]


def _most_lost(runs: list[Run], limit: int) -> list[Run]:
    """All of ``runs``, or the ``limit`` whose breaks invalidated the most tokens, in run order."""
    if len(runs) <= limit:
        return runs
    lost = [float(run["break_tokens"].fillna(0).sum()) if "break_tokens" in run else 0.0 for _, run in runs]
    return [runs[i] for i in _largest_in_order(lost, limit)]


def timeline_runs(trace: pd.DataFrame, limit: int = TIMELINE_RUNS) -> list[Run]:
    """The runs the break timeline draws, in run order: all of them, or the ``limit`` runs whose
    breaks invalidated the most tokens."""
    return _most_lost(_runs(trace), limit)


def plot_break_timeline(trace: pd.DataFrame, limit: int = TIMELINE_RUNS) -> Figure:
    """Invalidated tokens of every prefix break against the request index, one row per run, by
    cause (at most ``limit`` runs: :func:`timeline_runs`)."""
    return _draw_timeline(timeline_runs(trace, limit))


def _draw_timeline(runs: list[Run]) -> Figure:
    figure = Figure(figsize=(9.0, 1.0 + 1.6 * max(1, len(runs))), layout="constrained")
    axes = figure.subplots(max(1, len(runs)), 1, squeeze=False)[:, 0]
    for ax, (key, run) in zip(axes, runs, strict=False):
        breaks = run[run["break_cause"].notna()] if "break_cause" in run.columns else run.iloc[:0]
        for cause in CAUSES:
            rows = breaks[breaks["break_cause"] == cause]
            if len(rows):
                ax.scatter(rows["request"], rows["break_tokens"], s=12, label=cause)
        ax.set_title(" / ".join(key[:2]), fontsize=9)
        ax.set_ylabel("tokens invalidated", fontsize=8)
        if len(breaks):
            ax.legend(fontsize=7, loc="upper left")
    axes[-1].set_xlabel("request")
    return figure


def compaction_diff_html(
    frames: Mapping[str, pd.DataFrame], shown: int = DIFF_ITEMS_SHOWN, compactions: int = DIFF_COMPACTIONS_SHOWN
) -> str:
    """One table per compaction: counts kept / summarised / removed, then the dropped items that a
    later request needed first. With more than ``compactions`` compactions, the ones that dropped
    the most items needed later are listed (in run order), and the page says so."""
    diff = frames.get("compaction_diff")
    items = frames.get("compaction_items")
    if diff is None or not len(diff):
        return "<p>No compactions.</p>"
    keys = [*_RUN, "request"]
    # One pass over the items instead of a filter of the whole frame per compaction.
    by_compaction: dict[tuple[object, ...], pd.DataFrame] = {}
    if items is not None and len(items):
        by_compaction = {tuple(key): group for key, group in items.groupby(keys, sort=False)}
    rows = diff.to_dict("records")
    parts = []
    if len(rows) > compactions:
        found = [by_compaction.get(tuple(row[k] for k in keys)) for row in rows]
        needed = [0.0 if group is None else float(group["needed_later"].sum()) for group in found]
        rows = [rows[i] for i in _largest_in_order(needed, compactions)]
        parts.append(
            f"<p>The {compactions} of {len(diff)} compactions that dropped the most items needed later; "
            "every one is in the compaction_diff and compaction_items frames.</p>"
        )
    for row in rows:
        label = f"{row['transcript']} / {row['engine']}, request {int(row['request'])}"
        parts.append(f"<h4>{html.escape(label)}</h4>")
        counts = {k: v for k, v in row.items() if str(k).startswith(("messages_", "fact_", "identifier_", "error_"))}
        parts.append(pd.DataFrame([counts]).to_html(index=False, border=0, na_rep=""))
        mine = by_compaction.get(tuple(row[k] for k in keys))
        if mine is not None:
            lost = mine.sort_values(["needed_later", "later_uses"], ascending=False, kind="stable").head(shown)
            listed = ["kind", "text", "outcome", "needed_later", "later_uses", "next_use"]
            parts.append(lost[listed].to_html(index=False, border=0, na_rep=""))
    return "\n".join(parts)


def measure_sections(trace: pd.DataFrame, frames: Mapping[str, pd.DataFrame] | None = None) -> list[str]:
    """HTML fragments for the report: break attribution table and timeline, compaction diffs."""
    if "break_cause" not in trace.columns:
        return []
    from contextlab.plots import figure_png

    parts = ["<h2>Prefix breaks by cause</h2>"]
    table = break_table(trace)
    parts.append(f"<div class='wide'>{table.to_html(index=False, border=0, na_rep='')}</div>")
    runs = _runs(trace)  # grouped once for the note and the figure
    drawn = _most_lost(runs, TIMELINE_RUNS)
    if len(drawn) < len(runs):
        parts.append(f"<p>Timeline: the {len(drawn)} of {len(runs)} runs whose breaks invalidated the most tokens.</p>")
    data = base64.b64encode(figure_png(_draw_timeline(drawn))).decode("ascii")
    parts.append(f"<p><img alt='prefix breaks' src='data:image/png;base64,{data}'></p>")
    if frames:
        parts.append("<h2>What each compaction dropped</h2><details><summary>per compaction</summary>")
        parts.append(compaction_diff_html(frames))
        parts.append("</details>")
        parts.extend(faithfulness_html(frames))
    return parts


def faithfulness_html(frames: Mapping[str, pd.DataFrame], shown: int = FINDINGS_SHOWN) -> list[str]:
    """The summary checks' findings (``faithfulness`` frame): counts per run and finding, then the
    first ``shown`` findings in run order. Nothing when the frame is absent."""
    findings = frames.get("faithfulness")
    if findings is None:
        return []
    parts = ["<h2>Summary faithfulness</h2>"]
    if not len(findings):
        return [*parts, "<p>No unsupported identifiers or status upgrades in engine-written rows.</p>"]
    keys = ["transcript", "engine", "params", "finding"]
    counts = findings.groupby(keys, sort=False).size().reset_index(name="findings")
    parts.append(f"<div class='wide'>{counts.to_html(index=False, border=0)}</div>")
    parts.append(f"<details><summary>first {min(shown, len(findings))} of {len(findings)} findings</summary>")
    listed = findings[["transcript", "engine", "request", "finding", "text"]].head(shown)
    parts.append(f"<div class='wide'>{listed.to_html(index=False, border=0, na_rep='')}</div></details>")
    return parts
