"""A self-contained HTML report (inline PNG figures + summary tables) built from the frames alone.

The report holds no timestamps or timing columns, so the same frames always give the same bytes.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from contextlab import schema
from contextlab.errors import ConfigError
from contextlab.host.trace import RUN_KEYS, TIMING_COLUMNS, summaries_from_frames
from contextlab.measure.views import measure_sections
from contextlab.plots import figure_png, plot_engine_comparison, require_columns
from contextlab.report_figures import transcript_panel

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
    """The other frames of the run(s) whose trace is ``trace_path``, by frame name, as either writer
    leaves them: ``contextlab bench --out`` (``trace.csv`` beside ``summary.csv``, ``probes.csv``, ...)
    or ``contextlab replay --out`` (``run.parquet`` beside ``run.compactions.parquet``, ...)."""
    trace_path = Path(trace_path)
    stem, suffix = trace_path.stem, trace_path.suffix
    candidates: list[str] = [f"{stem}.{{name}}{suffix}"]  # replay --out (contextlab.replay_files)
    if stem.endswith("trace"):
        candidates.append(f"{stem[: -len('trace')]}{{name}}{suffix}")  # bench --out
    found: dict[str, Path] = {}
    for name in schema.FRAMES:
        if name == "trace":
            continue
        for pattern in candidates:
            candidate = trace_path.with_name(pattern.format(name=name))
            if candidate.is_file():
                found[name] = candidate
                break
    return found


REPORT_FRAMES: tuple[str, ...] = ("compaction_diff", "compaction_items", "faithfulness")
"""The measurement frames the report shows (``ReplayResult.frames``); ``probes`` is not shown, so a
report never reads that, the largest of them."""


def summaries_from_trace(trace: pd.DataFrame, compactions: pd.DataFrame | None = None) -> pd.DataFrame:
    """One summary row per (transcript, engine, params) run, computed from the frames the way the replay
    computes it (:func:`contextlab.host.trace.summaries_from_frames`)."""
    require_columns(trace, RUN_KEYS, "report: trace")
    return summaries_from_frames(trace, compactions)


ENGINE_TABLE_SUMS: tuple[str, ...] = schema.declared(
    "summary",
    "requests",
    "compactions",
    "prompt_tokens_total",
    "prompt_tokens_max",
    "prefix_tokens_total",
    "cache_read_tokens_total",
    "cache_write_tokens_total",
    "uncached_tokens_total",
    "cost_usd",
    "violations",
    "overflows",
    "invalid_results",
    "fact_retention_final",
)
"""Summary columns the engine table totals (peak and retention are combined by max and mean)."""


def engine_table(summaries: pd.DataFrame, by: Sequence[str] = ("engine", "params")) -> pd.DataFrame:
    """Totals per ``by`` group (default: per engine and parameters, across transcripts): runs, failures,
    tokens, compactions, violations, shares, cost and mean final fact retention. Columns other helpers
    add (``invalid_results``, ``fact_retention_final``) are read by name when present."""
    keys = list(by)
    require_columns(summaries, [*keys, "prompt_tokens_total"], "report: summaries")
    frame = summaries.copy()
    frame["_failed"] = frame["status"].astype(str) != "ok" if "status" in frame.columns else False
    aggregations: dict[str, tuple[str, str]] = {"runs": ("engine", "size"), "failed": ("_failed", "sum")}
    if "cache_read_tokens_total" in frame.columns:
        frame["_provider_tokens"] = _provider_tokens(frame)
        aggregations["_provider_tokens"] = ("_provider_tokens", "sum")
    for column in ENGINE_TABLE_SUMS:
        if column in frame.columns:
            how = {"prompt_tokens_max": "max", "fact_retention_final": "mean"}.get(column, "sum")
            if how != "sum" or pd.api.types.is_numeric_dtype(frame[column]):
                aggregations[column] = (column, how)
    table = frame.groupby(keys, sort=False).agg(**aggregations).reset_index()
    if "prefix_tokens_total" in table.columns:
        prompt = table["prompt_tokens_total"].where(table["prompt_tokens_total"] > 0)
        table["prefix_share"] = (table["prefix_tokens_total"] / prompt).fillna(0.0).round(4)
    if "cache_read_tokens_total" in table.columns:
        seen = table["_provider_tokens"].where(table["_provider_tokens"] > 0)
        table["cache_hit_rate"] = (table["cache_read_tokens_total"] / seen).fillna(0.0).round(4)
    table = table.drop(columns=["_provider_tokens"], errors="ignore")
    return table


def _provider_tokens(summaries: pd.DataFrame) -> pd.Series:
    """Per run, the prompt tokens the provider saw (read + write + uncached: the summary's hit-rate
    denominator, which differs from the host's count under a calibrated token scale). Runs stored
    before ``uncached_tokens_total`` existed fall back to ``prompt_tokens_total``."""
    host = pd.to_numeric(summaries["prompt_tokens_total"], errors="coerce").fillna(0)
    parts = ("cache_read_tokens_total", "cache_write_tokens_total", "uncached_tokens_total")
    if not set(parts) <= set(summaries.columns):
        return host
    provider: pd.Series = summaries[list(parts)].apply(pd.to_numeric, errors="coerce").sum(axis=1, min_count=len(parts))
    return provider.fillna(host)


LEADERBOARD_COLUMNS: list[tuple[str, str]] = [
    ("engine", "engine"),
    ("params", "params"),
    ("runs", "runs"),
    ("cost_usd", "cost"),
    ("cache_hit_rate", "cache hit rate"),
    ("prompt_tokens_max", "peak tokens"),
    ("compactions", "compactions"),
    ("fact_retention_final", "fact retention"),
    ("violations", "violations"),
    ("overflows", "overflows"),
    ("invalid_results", "invalid results"),
]
"""Leaderboard columns, most important first (the ones a sweep lacks are left out)."""

FLAGS: dict[str, str] = {
    "failed": "failed runs",
    "violations": "violations",
    "invalid_results": "invalid results",
    "overflows": "overflows",
}
"""An engine group with any of these is flagged and listed apart, never ranked."""


def leaderboard(summaries: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ranked, flagged): engine groups ranked by cost (else total prompt tokens), and the groups whose
    runs failed or had violations, invalid results or overflows, with a ``flags`` column saying which."""
    table = engine_table(summaries)
    reasons: list[list[str]] = [[] for _ in range(len(table))]
    for column, label in FLAGS.items():
        if column in table.columns:
            hits = pd.to_numeric(table[column], errors="coerce").fillna(0).to_numpy() > 0
            for row, hit in enumerate(hits):
                if hit:
                    reasons[row].append(label)
    table["flags"] = [", ".join(r) for r in reasons]
    flagged = table[table["flags"] != ""].reset_index(drop=True)
    ranked = table[table["flags"] == ""]
    priced = "cost_usd" in ranked.columns and pd.to_numeric(ranked["cost_usd"], errors="coerce").notna().any()
    ranked = ranked.sort_values("cost_usd" if priced else "prompt_tokens_total", kind="stable").reset_index(drop=True)
    ranked.insert(0, "rank", range(1, len(ranked) + 1))
    return ranked, flagged


def _leaderboard_view(table: pd.DataFrame, extra: Sequence[str] = ()) -> pd.DataFrame:
    columns = [(c, label) for c, label in [("rank", "rank"), *LEADERBOARD_COLUMNS] if c in table.columns]
    columns += [(c, c) for c in extra if c in table.columns]
    view = table[[c for c, _ in columns]].copy()
    for column in view.columns:
        if schema.unit_of(column) in ("share", "usd"):  # percentages and dollars; counts stay numbers
            view[column] = view[column].map(lambda v, c=column: schema.format_value(c, v))
    return view.rename(columns=dict(columns))


def report_figures(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None,
    summaries: pd.DataFrame,
    max_transcripts: int = MAX_TRANSCRIPTS,
) -> dict[str, Figure]:
    """The report's figures by file stem: the engine comparison, then one panel per transcript."""
    figures: dict[str, Figure] = {}
    priced = "cost_usd" in summaries.columns and pd.to_numeric(summaries["cost_usd"], errors="coerce").notna().any()
    metric = "cost_usd" if priced else "prompt_tokens_total"
    figures[f"engines_{metric}"] = plot_engine_comparison(summaries, metric)
    transcripts = list(dict.fromkeys(trace["transcript"].astype(str)))
    for index, name in enumerate(transcripts[:max_transcripts]):
        figures[f"transcript_{index:02d}"] = transcript_panel(trace, compactions, name)
    return figures


def render_pngs(figures: dict[str, Figure]) -> dict[str, bytes]:
    """Each figure as PNG bytes (same figure, same bytes)."""
    return {name: figure_png(figure) for name, figure in figures.items()}


def build_report(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    summaries: pd.DataFrame | None = None,
    *,
    title: str = "contextlab report",
    max_transcripts: int = MAX_TRANSCRIPTS,
    config: str | None = None,
    pngs: dict[str, bytes] | None = None,
    frames: Mapping[str, pd.DataFrame] | None = None,
) -> str:
    """The report as one HTML string (figures inlined as base64 PNG).

    It opens with the engine leaderboard (ranked by cost, else prompt tokens; groups with failed runs,
    violations, invalid results or overflows are flagged and listed apart), then per transcript: prompt
    tokens with threshold lines and compaction markers, cache hit rate, cumulative cost, the prefix-break
    timeline and retention curves; then the sweep's config and every run.

    Args:
        trace: Long trace frame.
        compactions: Compaction-event frame (optional; adds compaction markers by trigger).
        summaries: Summary frame (optional; computed from the trace when omitted, so failed runs
            without rows are only listed when it is given).
        title: Page title.
        max_transcripts: How many transcripts get their own figures.
        config: The sweep's config text (YAML), shown at the end.
        pngs: Figures already rendered with :func:`render_pngs` (rendered here when omitted).
        frames: Measurement frames (``ReplayResult.frames``; optional, adds the compaction diffs).
    """
    require_columns(trace, ["transcript", "engine", "params", "request", "prompt_tokens"], "report: trace")
    if summaries is None:
        summaries = summaries_from_trace(trace, compactions)
    if pngs is None:
        pngs = render_pngs(report_figures(trace, compactions, summaries, max_transcripts))
    parts = [
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    transcripts = list(dict.fromkeys(trace["transcript"].astype(str)))
    engines = list(dict.fromkeys(summaries["engine"].astype(str)))
    parts.append(
        f"<p>{len(summaries)} runs: {len(transcripts)} transcripts x {len(engines)} engines "
        f"({html.escape(', '.join(engines))}); {len(trace):,} requests.</p>"
    )
    ranked, flagged = leaderboard(summaries)
    parts.append("<h2>Leaderboard</h2>")
    parts.append("<p>Per engine and parameters over all transcripts, cheapest first.</p>")
    parts.append(_table(_leaderboard_view(ranked)))
    if len(flagged):
        parts.append("<h3 class='failed'>Flagged, not ranked</h3>")
        parts.append(_table(_leaderboard_view(flagged, ["flags"])))
    for name, data in pngs.items():
        if name.startswith("engines_"):
            parts.append(_img_bytes(data))
    if "status" in summaries.columns:
        failed = summaries[summaries["status"].astype(str) != "ok"]
        if len(failed):
            parts.append("<h2 class='failed'>Failed runs</h2>")
            shown = [c for c in ("transcript", "engine", "params", "status", "error") if c in failed.columns]
            parts.append(_table(failed[shown]))
    parts.append("<h2>Per transcript</h2>")
    if len(transcripts) > max_transcripts:
        parts.append(f"<p>Showing the first {max_transcripts} of {len(transcripts)} transcripts.</p>")
    for index, name in enumerate(transcripts[:max_transcripts]):
        parts.append(f"<h3>{html.escape(name)}</h3>")
        panel = pngs.get(f"transcript_{index:02d}")
        if panel is not None:
            parts.append(_img_bytes(panel))
    parts.extend(measure_sections(trace, frames))  # break attribution, compaction diffs (docs/metrics.md)
    if config:
        parts.append(f"<h2>Config</h2><pre>{html.escape(config)}</pre>")
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
    config: str | None = None,
    png_folder: str | Path | None = None,
    frames: Mapping[str, pd.DataFrame] | None = None,
) -> Path:
    """Build the report and write it to ``path`` (a temporary file renamed into place); with
    ``png_folder``, also save each figure there as a PNG file; ``frames`` as in :func:`build_report`."""
    path = Path(path)
    if not path.parent.exists():
        raise ConfigError(f"{path}: folder {path.parent} does not exist")
    if summaries is None:
        summaries = summaries_from_trace(trace, compactions)
    pngs = render_pngs(report_figures(trace, compactions, summaries, max_transcripts))
    text = build_report(
        trace,
        compactions,
        summaries,
        title=title,
        max_transcripts=max_transcripts,
        config=config,
        pngs=pngs,
        frames=frames,
    )
    if png_folder is not None:
        folder = Path(png_folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in pngs.items():
            tmp = folder / f".{name}.png.tmp"
            tmp.write_bytes(data)
            tmp.replace(folder / f"{name}.png")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _img_bytes(png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f"<p><img alt='figure' src='data:image/png;base64,{data}'></p>"


def _table(frame: pd.DataFrame) -> str:
    frame = frame.copy()
    for column in frame.columns:
        if pd.api.types.is_integer_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column]):
            frame[column] = frame[column].map(lambda v: f"{v:,}")
    markup = frame.to_html(index=False, escape=True, border=0, na_rep="", float_format=lambda v: f"{v:,.4g}")
    return f"<div class='wide'>{markup}</div>"  # wide tables scroll instead of overflowing the page
