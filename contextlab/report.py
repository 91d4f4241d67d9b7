"""A self-contained HTML report (inline PNG figures + summary tables) built from the frames alone.

The report holds no timestamps or timing columns, so the same frames always give the same bytes.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from contextlab.errors import ConfigError
from contextlab.host.trace import COMPACTION_COLUMNS, TIMING_COLUMNS, summarize
from contextlab.measure.views import measure_sections
from contextlab.plots import (
    figure_png,
    plot_cache_hit_rate,
    plot_cumulative,
    plot_engine_comparison,
    plot_prompt_tokens,
    require_columns,
)

MAX_TRANSCRIPTS = 8
"""Per-transcript figures drawn by default; a sweep over hundreds of transcripts stays readable."""

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
img{max-width:100%}
.failed{color:#a00}
.wide{overflow-x:auto}
"""


def load_frame(path: str | Path) -> pd.DataFrame:
    """Read a ``.csv`` or ``.parquet`` frame, with a one-line error for a missing or bad file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            return pd.read_csv(path)
        if suffix == ".parquet":
            return pd.read_parquet(path)
    except Exception as error:
        raise ConfigError(f"{path}: cannot read as {suffix[1:]}: {type(error).__name__}: {error}") from error
    raise ConfigError(f"{path}: unsupported file type {suffix or '(none)'}; use .csv or .parquet")


def sibling_frames(trace_path: str | Path) -> dict[str, Path]:
    """``compactions.*`` / ``summary.*`` beside a ``trace.*`` file (as ``contextlab bench`` writes them)."""
    trace_path = Path(trace_path)
    found: dict[str, Path] = {}
    stem = trace_path.stem
    prefix = stem[: -len("trace")] if stem.endswith("trace") else None
    if prefix is None:
        return found
    for name in ("compactions", "summary"):
        candidate = trace_path.with_name(f"{prefix}{name}{trace_path.suffix}")
        if candidate.is_file():
            found[name] = candidate
    return found


def summaries_from_trace(trace: pd.DataFrame, compactions: pd.DataFrame | None = None) -> pd.DataFrame:
    """One summary row per (transcript, engine, params) run, computed from the frames."""
    require_columns(trace, ["transcript", "engine", "params"], "report: trace")
    events = compactions if compactions is not None else pd.DataFrame(columns=COMPACTION_COLUMNS)
    rows = []
    keys = ["transcript", "engine", "params"]
    for key, run in trace.groupby(keys, sort=False):
        mask = pd.Series(True, index=events.index)
        for column, value in zip(keys, key, strict=True):
            mask &= events[column].astype(str) == str(value)
        base = {**dict(zip(keys, key, strict=True)), "status": "ok", "error": None}
        extra: dict[str, Any] = {}
        # Same keys as the cache observer's summary, so both kinds of summary tables line up.
        for column in ("cache_read_tokens", "cache_write_tokens"):
            if column in run.columns:
                extra[f"{column}_total"] = int(run[column].fillna(0).sum())
        if "cost_usd" in run.columns and run["cost_usd"].notna().any():
            extra["cost_usd"] = float(run["cost_usd"].fillna(0).sum())
        rows.append(summarize(run.reset_index(drop=True), events[mask].reset_index(drop=True), base, extra))
    return pd.DataFrame(rows)


def engine_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """Totals per (engine, params) across transcripts: runs, failures, tokens, compactions, shares."""
    require_columns(summaries, ["engine", "params", "prompt_tokens_total"], "report: summaries")
    frame = summaries.copy()
    frame["_failed"] = frame["status"].astype(str) != "ok" if "status" in frame.columns else False
    aggregations: dict[str, tuple[str, str]] = {"runs": ("engine", "size"), "failed": ("_failed", "sum")}
    for column in (
        "requests",
        "compactions",
        "prompt_tokens_total",
        "prompt_tokens_max",
        "prefix_tokens_total",
        "cache_read_tokens_total",
        "cost_usd",
        "violations",
        "overflows",
    ):
        if column in frame.columns:
            aggregations[column] = (column, "max" if column == "prompt_tokens_max" else "sum")
    table = frame.groupby(["engine", "params"], sort=False).agg(**aggregations).reset_index()
    if "prefix_tokens_total" in table.columns:
        prompt = table["prompt_tokens_total"].where(table["prompt_tokens_total"] > 0)
        table["prefix_share"] = (table["prefix_tokens_total"] / prompt).fillna(0.0).round(4)
    if "cache_read_tokens_total" in table.columns:
        prompt = table["prompt_tokens_total"].where(table["prompt_tokens_total"] > 0)
        table["cache_hit_rate"] = (table["cache_read_tokens_total"] / prompt).fillna(0.0).round(4)
    return table


def build_report(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    summaries: pd.DataFrame | None = None,
    *,
    title: str = "contextlab report",
    max_transcripts: int = MAX_TRANSCRIPTS,
    frames: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """The report as one HTML string (figures inlined as base64 PNG).

    Args:
        trace: Long trace frame.
        compactions: Compaction-event frame (optional; adds compaction markers by trigger).
        summaries: Summary frame (optional; computed from the trace when omitted, so failed runs
            without rows are only listed when it is given).
        title: Page title.
        max_transcripts: How many transcripts get their own figures.
        frames: Measurement frames (``ReplayResult.frames``; optional, adds the compaction diffs).
    """
    require_columns(trace, ["transcript", "engine", "params", "request", "prompt_tokens"], "report: trace")
    if summaries is None:
        summaries = summaries_from_trace(trace, compactions)
    parts = [
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    transcripts = list(dict.fromkeys(trace["transcript"].astype(str)))
    engines = list(dict.fromkeys(summaries["engine"].astype(str)))
    parts.append(
        f"<p>{len(summaries)} runs: {len(transcripts)} transcripts x {len(engines)} engines "
        f"({html.escape(', '.join(engines))}); {len(trace)} requests.</p>"
    )
    parts.append("<h2>Engines</h2>")
    parts.append(_table(engine_table(summaries)))
    parts.append(_img(plot_engine_comparison(summaries, "prompt_tokens_total")))
    if "cost_usd" in summaries.columns and pd.to_numeric(summaries["cost_usd"], errors="coerce").notna().any():
        parts.append(_img(plot_engine_comparison(summaries, "cost_usd")))
    if "status" in summaries.columns:
        failed = summaries[summaries["status"].astype(str) != "ok"]
        if len(failed):
            parts.append("<h2 class='failed'>Failed runs</h2>")
            parts.append(
                _table(failed[[c for c in ("transcript", "engine", "params", "error") if c in failed.columns]])
            )
    parts.append("<h2>Per transcript</h2>")
    if len(transcripts) > max_transcripts:
        parts.append(f"<p>Showing the first {max_transcripts} of {len(transcripts)} transcripts.</p>")
    for name in transcripts[:max_transcripts]:
        parts.append(f"<h3>{html.escape(name)}</h3>")
        parts.append(_img(_transcript_figure(trace, compactions, name)))
    parts.extend(measure_sections(trace, frames))  # break attribution, compaction diffs (docs/metrics.md)
    parts.append("<h2>All runs</h2><details><summary>summary table</summary>")
    parts.append(
        _table(summaries.drop(columns=[c for c in summaries.columns if c in TIMING_COLUMNS or c == "engine_ms_total"]))
    )
    parts.append("</details></body></html>\n")
    return "\n".join(parts)


def write_report(
    path: str | Path,
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    summaries: pd.DataFrame | None = None,
    *,
    title: str = "contextlab report",
    max_transcripts: int = MAX_TRANSCRIPTS,
) -> Path:
    """Build the report and write it to ``path`` (a temporary file renamed into place)."""
    path = Path(path)
    if not path.parent.exists():
        raise ConfigError(f"{path}: folder {path.parent} does not exist")
    text = build_report(trace, compactions, summaries, title=title, max_transcripts=max_transcripts)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _transcript_figure(trace: pd.DataFrame, compactions: pd.DataFrame | None, name: str) -> Figure:
    figure = Figure(figsize=(9.0, 10.0), layout="constrained")
    top, middle, bottom = figure.subplots(3, 1)
    plot_prompt_tokens(trace, compactions, transcript=name, ax=top, title="prompt tokens per request")
    plot_cache_hit_rate(trace, transcript=name, ax=middle, title="cache hits per request")
    plot_cumulative(trace, transcript=name, ax=bottom, title="cumulative")
    return figure


def _img(figure: Figure) -> str:
    data = base64.b64encode(figure_png(figure)).decode("ascii")
    return f"<p><img alt='figure' src='data:image/png;base64,{data}'></p>"


def _table(frame: pd.DataFrame) -> str:
    frame = frame.copy()
    for column in frame.columns:
        if pd.api.types.is_integer_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column]):
            frame[column] = frame[column].map(lambda v: f"{v:,}")
    markup = frame.to_html(index=False, escape=True, border=0, na_rep="", float_format=lambda v: f"{v:,.4g}")
    return f"<div class='wide'>{markup}</div>"  # wide tables scroll instead of overflowing the page
