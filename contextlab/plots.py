"""Matplotlib figures drawn from the trace, compaction and summary frames (and nothing else).

Library style: every function takes ``ax=None`` (a fresh :class:`~matplotlib.figure.Figure` is made
when omitted), returns the Figure, and never calls ``plt.show()`` or picks a backend. Figures are
built without pyplot, so they hold no global state and are safe in worker threads; notebooks
display them with ``%matplotlib inline`` (or :func:`figure_png`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from contextlab import schema
from contextlab.errors import ConfigError
from contextlab.schema import Trigger

RUN_KEYS: tuple[str, ...] = schema.declared("trace", "engine", "params")
"""Columns that identify one line (one run) within a transcript."""

MARKERS: dict[Trigger, str] = {"manual": "*", "preflight": "v", "pre_api": "v", "post_tool": "v", "overflow": "X"}
"""Marker per compaction trigger; anything else (plugins' maintenance passes) gets ``"o"``."""


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise :class:`ConfigError` naming the first missing column.

    Args:
        frame: The frame to check.
        columns: Columns that must be present.
        what: What the frame is for (``"plot_prompt_tokens: trace"``), used in the message.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ConfigError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        have = ", ".join(map(str, frame.columns[:12])) + (", ..." if len(frame.columns) > 12 else "")
        raise ConfigError(f"{what}: frame is missing column {missing[0]!r} (has: {have or 'no columns'})")


def select_transcript(trace: pd.DataFrame, transcript: str | None, what: str) -> tuple[pd.DataFrame, str]:
    """The rows of one transcript: the named one, or the only one present."""
    require_columns(trace, ["transcript"], what)
    names = list(dict.fromkeys(trace["transcript"].astype(str)))
    if not names:
        raise ConfigError(f"{what}: the trace has no rows")
    if transcript is None:
        if len(names) > 1:
            shown = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
            raise ConfigError(f"{what}: the trace holds {len(names)} transcripts ({shown}); pass transcript=")
        transcript = names[0]
    if transcript not in names:
        raise ConfigError(f"{what}: transcript {transcript!r} is not in the trace")
    return trace[trace["transcript"].astype(str) == transcript], transcript


def run_labels(frame: pd.DataFrame) -> dict[tuple[str, str], str]:
    """Legend label per ``(engine, params)``: the engine name, plus params when they differ."""
    keys = list(dict.fromkeys(zip(frame["engine"].astype(str), frame["params"].astype(str), strict=True)))
    engines = [k[0] for k in keys]
    return {k: k[0] if engines.count(k[0]) == 1 and _one_params(keys) else f"{k[0]} ({k[1]})" for k in keys}


def _one_params(keys: Sequence[tuple[str, str]]) -> bool:
    return len({k[1] for k in keys}) <= 1


def _axes(ax: Axes | None, size: tuple[float, float] = (9.0, 4.5)) -> tuple[Figure, Axes]:
    if ax is not None:
        figure: Any = ax.figure
        # Axes inside a SubFigure: walk up to the root Figure (the thing callers save or display).
        while figure is not None and not isinstance(figure, Figure):
            figure = getattr(figure, "figure", None)
        if not isinstance(figure, Figure):
            raise ConfigError("ax is not attached to a matplotlib Figure")
        return figure, ax
    figure = Figure(figsize=size, layout="constrained")
    return figure, figure.add_subplot()


def run_groups(frame: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """``((engine, params), rows)`` per run in first-appearance order (so colours are stable from call
    to call), each run's rows sorted by request."""
    keyed = frame.assign(_engine=frame["engine"].astype(str), _params=frame["params"].astype(str))
    order = list(dict.fromkeys(zip(keyed["_engine"], keyed["_params"], strict=True)))
    grouped = {k: g for k, g in keyed.groupby(["_engine", "_params"], sort=False)}
    return [(k, grouped[k].drop(columns=["_engine", "_params"]).sort_values("request")) for k in order]


LOG_SPREAD = 20.0
"""An automatic log axis when the largest run's values are this many times the smallest run's."""

LEGEND_OUTSIDE_AT = 4
"""With this many runs or more the legend moves outside the data, to the right."""


def wants_log(values_per_run: Sequence[float]) -> bool:
    """True when one run dwarfs the rest (largest peak over smallest positive peak >= :data:`LOG_SPREAD`)."""
    peaks = [v for v in values_per_run if v > 0]
    return len(peaks) >= 2 and max(peaks) / min(peaks) >= LOG_SPREAD


def _finish_axes(ax: Axes, n_runs: int, *, log: bool = False) -> None:
    """Integer request ticks, a log y axis when asked, and the legend outside the data when crowded."""
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if log:
        ax.set_yscale("log")
    if n_runs >= LEGEND_OUTSIDE_AT:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0)
    else:
        ax.legend(loc="upper left", fontsize="small")


def effective_thresholds(trace: pd.DataFrame) -> dict[str, int]:
    """Label per run → its effective threshold in tokens (the last row's ``threshold_tokens``)."""
    require_columns(trace, [*RUN_KEYS, "request", "threshold_tokens"], "effective_thresholds: trace")
    labels = run_labels(trace)
    return {labels[key]: int(run["threshold_tokens"].iloc[-1]) for key, run in run_groups(trace)}


def plot_prompt_tokens(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    *,
    transcript: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    log: bool | None = None,
) -> Figure:
    """Exact prompt tokens per request, one line per engine run, with threshold, window and compactions.

    Each run's ``threshold_tokens`` is drawn as a dashed line in the run's colour and each distinct
    ``context_length`` as a grey dotted line. Compactions are marked on the run's line: committed
    passes from ``compactions`` when given (``*`` manual, ``v`` automatic, ``X`` overflow), else the
    trace's ``compressed`` rows.

    Args:
        trace: Long trace frame (one or more runs of one transcript).
        compactions: Optional compaction-event frame for the same runs.
        transcript: Which transcript to draw when the trace holds several.
        ax: Axes to draw on; a new Figure is made when omitted.
        title: Axes title (default: the transcript id).
        log: Log y axis; None chooses one when one run's peak dwarfs another's (:func:`wants_log`).

    Each run's effective threshold is in the legend (``compressor threshold 27,200``): what the
    engine compared against, after the host's floor and the engine's own rules.

    Returns:
        The Figure holding the axes.
    """
    what = "plot_prompt_tokens: trace"
    require_columns(
        trace,
        [
            "transcript",
            *RUN_KEYS,
            "request",
            "prompt_tokens",
            "threshold_tokens",
            "context_length",
            "compressed",
        ],
        what,
    )
    rows, name = select_transcript(trace, transcript, what)
    marks = _committed(compactions, name) if compactions is not None else None
    figure, ax = _axes(ax)
    labels = run_labels(rows)
    for key, run in run_groups(rows):
        x, y = run["request"].to_numpy(), run["prompt_tokens"].to_numpy()
        (line,) = ax.plot(x, y, label=labels[key], linewidth=1.6)
        color = line.get_color()
        ax.plot(
            x,
            run["threshold_tokens"].to_numpy(),
            linestyle="--",
            linewidth=1,
            color=color,
            alpha=0.7,
            label=f"{labels[key]} threshold {int(run['threshold_tokens'].iloc[-1]):,}",
        )
        by_request = dict(zip(run["request"], run["prompt_tokens"], strict=True))
        if marks is not None:
            passes = marks[(marks["engine"].astype(str) == key[0]) & (marks["params"].astype(str) == key[1])]
            for trigger, events in passes.groupby("trigger", sort=True):
                at = [r for r in events["request"] if r in by_request]
                ax.scatter(
                    at,
                    [by_request[r] for r in at],
                    marker=MARKERS.get(str(trigger), "o"),  # type: ignore[call-overload]
                    s=60,
                    color=color,
                    edgecolors="black",
                    linewidths=0.6,
                    zorder=3,
                )
        else:
            hit = run[run["compressed"].astype(bool)]
            ax.scatter(
                hit["request"],
                hit["prompt_tokens"],
                marker="v",
                s=60,
                color=color,
                edgecolors="black",
                linewidths=0.6,
                zorder=3,
            )
    for window in sorted(set(int(v) for v in rows["context_length"])):
        ax.axhline(window, color="grey", linestyle=":", linewidth=1)
    ax.plot([], [], linestyle=":", color="grey", label="context length (dotted)")
    ax.scatter([], [], marker="v", color="grey", edgecolors="black", label="compaction")
    ax.set_xlabel("request")
    ax.set_ylabel("prompt tokens (exact)")
    ax.set_title(title if title is not None else name)
    runs = run_groups(rows)
    use_log = wants_log([float(r["prompt_tokens"].max()) for _, r in runs]) if log is None else log
    if not use_log:
        ax.set_ylim(bottom=0)
    _finish_axes(ax, len(runs), log=use_log)
    return figure


def _committed(compactions: pd.DataFrame, transcript: str) -> pd.DataFrame:
    require_columns(
        compactions,
        ["transcript", *RUN_KEYS, "request", "trigger", "outcome"],
        "plot_prompt_tokens: compactions",
    )
    rows = compactions[(compactions["transcript"].astype(str) == transcript) & (compactions["outcome"] == "committed")]
    return rows[rows["trigger"] != "prune"]


def hit_rate_column(trace: pd.DataFrame) -> str:
    """``cache_read_tokens`` when the cache model filled it, else ``prefix_tokens``."""
    if "cache_read_tokens" in trace.columns and trace["cache_read_tokens"].notna().any():
        return "cache_read_tokens"
    return "prefix_tokens"


def plot_cache_hit_rate(
    trace: pd.DataFrame,
    *,
    transcript: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool = True,
    ttl_s: float = 300.0,
) -> Figure:
    """Share of each request's prompt served from cache, one line per run, dips marked by cause.

    Uses ``cache_read_tokens / prompt_tokens`` when the trace has cache-model columns, otherwise
    ``prefix_tokens / prompt_tokens`` (the common prefix with the previous request: the most any
    prefix cache could hit). The y-label says which. With ``annotate``, each dip (the rate falling
    by :data:`DIP` or more) gets a marker for its cause (:func:`cache_dips`), and the deepest few
    are labelled with it.

    Args:
        ttl_s: A gap between requests at least this long counts as a TTL expiry (5 min default).
    """
    what = "plot_cache_hit_rate: trace"
    require_columns(trace, ["transcript", *RUN_KEYS, "request", "prompt_tokens"], what)
    column = hit_rate_column(trace)
    require_columns(trace, [column], what)
    rows, name = select_transcript(trace, transcript, what)
    figure, ax = _axes(ax)
    labels = run_labels(rows)
    dips: list[tuple[CacheDip, str]] = []
    for key, run in run_groups(rows):
        prompt = run["prompt_tokens"].astype(float)
        rate = (run[column].astype(float) / prompt.where(prompt > 0)).fillna(0.0)
        # Dots help on short runs; on hundreds of requests they only hide the lines.
        marker = "." if len(run) <= 80 else None
        (line,) = ax.plot(run["request"].to_numpy(), rate.to_numpy(), label=labels[key], linewidth=1.2, marker=marker)
        if annotate:
            dips.extend((d, to_hex(line.get_color())) for d in cache_dips(run, column, ttl_s=ttl_s))
    if dips:
        _mark_dips(ax, dips)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("request")
    ax.set_ylabel(
        "cache hit rate (cache read / prompt)" if column == "cache_read_tokens" else "prefix share (prefix / prompt)"
    )
    ax.set_title(title if title is not None else name)
    _finish_axes(ax, len(labels))
    return figure


DIP = 0.25
"""A fall of the hit rate by this much from one request to the next is a dip worth explaining."""

DIP_MARKERS: dict[str, str] = {"compaction": "v", "prune": "s", "TTL expiry": "o", "context edit": "D", "prefix": "P"}
"""Marker per dip cause."""


@dataclass(frozen=True)
class CacheDip:
    """A request whose cache hit rate fell, and why."""

    request: int
    rate: float
    drop: float
    cause: str
    """``compaction``, ``prune``, ``TTL expiry`` (the gap since the previous request), ``context edit``
    (``select_context`` replaced the request), or ``prefix`` (something else changed the start)."""


def cache_dips(run: pd.DataFrame, column: str = "prefix_tokens", *, ttl_s: float = 300.0) -> list[CacheDip]:
    """The dips of one run's hit rate, each with its cause read from the trace row.

    Args:
        run: One run's trace rows, in request order.
        column: ``cache_read_tokens`` or ``prefix_tokens`` (see :func:`hit_rate_column`).
        ttl_s: Gap in seconds that empties a cache.
    """
    prompt = run["prompt_tokens"].astype(float)
    rate = (run[column].astype(float) / prompt.where(prompt > 0)).fillna(0.0).to_numpy()
    flags = {c: run[c].astype(bool).to_numpy() for c in ("compressed", "pruned", "select_context_used") if c in run}
    stamps = run["timestamp"].astype(float).to_numpy() if "timestamp" in run else None
    requests = run["request"].to_numpy()
    found = []
    for i in range(1, len(rate)):
        drop = float(rate[i - 1] - rate[i])
        if drop < DIP:
            continue
        if flags.get("compressed") is not None and flags["compressed"][i]:
            cause = "compaction"
        elif flags.get("pruned") is not None and flags["pruned"][i]:
            cause = "prune"
        elif stamps is not None and stamps[i] - stamps[i - 1] >= ttl_s:
            cause = "TTL expiry"
        elif flags.get("select_context_used") is not None and flags["select_context_used"][i]:
            cause = "context edit"
        else:
            cause = "prefix"
        found.append(CacheDip(int(requests[i]), float(rate[i]), drop, cause))
    return found


MAX_DIP_LABELS = 6
"""The deepest dips get a text label; the rest only their marker (more labels would hide the lines)."""


def _mark_dips(ax: Axes, dips: list[tuple[CacheDip, str]]) -> None:
    for cause, marker in DIP_MARKERS.items():
        these = [(d, c) for d, c in dips if d.cause == cause]
        if not these:
            continue
        ax.scatter(
            [d.request for d, _ in these],
            [d.rate for d, _ in these],
            marker=marker,
            s=36,
            facecolors="none",
            edgecolors=[c for _, c in these],
            linewidths=1.2,
            zorder=3,
        )
        ax.scatter([], [], marker=marker, facecolors="none", edgecolors="black", label=f"dip: {cause}")
    deepest = sorted(dips, key=lambda dc: -dc[0].drop)
    # Every cause gets its deepest dip labelled first, so a rare cause is not hidden by a common one.
    firsts = list({dc[0].cause: dc for dc in reversed(deepest)}.values())
    labelled = [*firsts, *(dc for dc in deepest if dc not in firsts)][:MAX_DIP_LABELS]
    for dip, color in labelled:
        ax.annotate(
            dip.cause,
            (dip.request, dip.rate),
            xytext=(4, 5),  # above the point: dips sit near zero, where a label below would leave the axes
            textcoords="offset points",
            fontsize="x-small",
            color=color,
        )


def cumulative_column(trace: pd.DataFrame) -> str:
    """``cost_usd`` when the cache model priced the requests, else ``prompt_tokens``."""
    if "cost_usd" in trace.columns and trace["cost_usd"].notna().any():
        return "cost_usd"
    return "prompt_tokens"


def plot_cumulative(
    trace: pd.DataFrame,
    *,
    column: str | None = None,
    transcript: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Running total per run: cost in USD when priced, else prompt tokens.

    Args:
        trace: Long trace frame.
        column: Column to accumulate (default :func:`cumulative_column`).
        transcript: Which transcript when the trace holds several.
        ax: Axes to draw on.
        title: Axes title.
    """
    what = "plot_cumulative: trace"
    column = column or cumulative_column(trace)
    require_columns(trace, ["transcript", *RUN_KEYS, "request", column], what)
    rows, name = select_transcript(trace, transcript, what)
    figure, ax = _axes(ax)
    labels = run_labels(rows)
    for key, run in run_groups(rows):
        ax.plot(
            run["request"].to_numpy(),
            run[column].astype(float).fillna(0.0).cumsum().to_numpy(),
            label=labels[key],
        )
    ax.set_xlabel("request")
    ax.set_ylabel("cumulative cost (USD)" if column == "cost_usd" else f"cumulative {column.replace('_', ' ')}")
    ax.set_title(title if title is not None else name)
    ax.set_ylim(bottom=0)
    _finish_axes(ax, len(labels))
    return figure


def plot_engine_comparison(
    summaries: pd.DataFrame,
    metric: str = "prompt_tokens_total",
    *,
    ax: Axes | None = None,
    title: str | None = None,
    log: bool | None = None,
    baseline: str | None = None,
) -> Figure:
    """One bar per engine run (``engine`` + ``params``), summed over transcripts; failed runs hatched.

    Args:
        summaries: Summary frame (one row per transcript x engine x params run).
        metric: Numeric summary column to compare (``prompt_tokens_total``, ``cost_usd``, ...).
        ax: Axes to draw on.
        title: Axes title (default: the metric).
        log: Log value axis; None chooses one when one bar dwarfs another (:func:`wants_log`).
        baseline: A run label (``"passthrough"``): bars become multiples of that run's value.
    """
    what = "plot_engine_comparison: summaries"
    require_columns(summaries, [*RUN_KEYS, metric], what)
    if not len(summaries):
        raise ConfigError(f"{what}: the frame has no rows")
    values = pd.to_numeric(summaries[metric], errors="coerce")
    if values.isna().all():
        raise ConfigError(f"{what}: column {metric!r} holds no numbers")
    frame = summaries.assign(
        _value=values.fillna(0.0),
        _engine=summaries["engine"].astype(str),
        _params=summaries["params"].astype(str),
    )
    failed = frame["status"].astype(str) != "ok" if "status" in frame.columns else pd.Series(False, index=frame.index)
    frame = frame.assign(_failed=failed)
    order = list(dict.fromkeys(zip(frame["_engine"], frame["_params"], strict=True)))
    grouped = frame.groupby(["_engine", "_params"], sort=False).agg(value=("_value", "sum"), failed=("_failed", "any"))
    labels = run_labels(frame[["_engine", "_params"]].set_axis(["engine", "params"], axis=1))
    figure, ax = _axes(ax, (max(5.0, 1.2 * len(order) + 2), 4.0))
    heights = [float(grouped.loc[k, "value"]) for k in order]
    ylabel = metric.replace("_", " ")
    if baseline is not None:
        by_label = {labels[k]: h for k, h in zip(order, heights, strict=True)}
        if not by_label.get(baseline):
            raise ConfigError(f"{what}: baseline {baseline!r} is not a run with a non-zero {metric}")
        heights = [h / by_label[baseline] for h in heights]
        ylabel = f"{ylabel} (x {baseline})"
    bars = ax.bar(range(len(order)), heights, color=[f"C{i % 10}" for i in range(len(order))])
    for bar, key in zip(bars, order, strict=True):
        if bool(grouped.loc[key, "failed"]):
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    ax.bar_label(
        bars,
        labels=[
            (f"{h:.2f}x" if baseline is not None else _short(h)) + (" (failed)" if grouped.loc[k, "failed"] else "")
            for h, k in zip(heights, order, strict=True)
        ],
        fontsize="small",
    )
    ax.set_xticks(
        range(len(order)),
        [labels[k] for k in order],
        rotation=20 if len(order) > 3 else 0,
        ha="right" if len(order) > 3 else "center",
    )
    ax.set_ylabel(ylabel)
    if (wants_log(heights) if log is None else log) and baseline is None:
        ax.set_yscale("log")
    ax.set_title(title if title is not None else f"{metric.replace('_', ' ')} by engine")
    return figure


def plot_fact_retention(
    trace: pd.DataFrame, *, transcript: str | None = None, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Share of the planted facts seen so far that are still in each request, one line per run.

    Needs the retention probes' ``fact_retention`` column (transcripts with gold facts); without it
    the axes say so instead of failing, so a dashboard on any transcript keeps its layout.
    """
    what = "plot_fact_retention: trace"
    require_columns(trace, ["transcript", *RUN_KEYS, "request"], what)
    rows, name = select_transcript(trace, transcript, what)
    figure, ax = _axes(ax)
    ax.set_title(title if title is not None else f"{name}: fact retention")
    ax.set_xlabel("request")
    ax.set_ylabel("facts in context / facts seen")
    if "fact_retention" not in rows.columns or rows["fact_retention"].isna().all():
        ax.text(0.5, 0.5, "no gold facts in this transcript", ha="center", va="center", transform=ax.transAxes)
        return figure
    labels = run_labels(rows)
    for key, run in run_groups(rows):
        ax.plot(run["request"].to_numpy(), run["fact_retention"].astype(float).to_numpy(), label=labels[key])
    ax.set_ylim(-0.02, 1.02)
    _finish_axes(ax, len(labels))
    return figure


def plot_prompt_tokens_grid(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    *,
    transcript: str | None = None,
    ncols: int = 3,
    figure: Figure | None = None,
    title: str | None = None,
) -> Figure:
    """Small multiples: one panel per engine run (prompt tokens, threshold, window, compactions).

    The panels share their axes, so runs compare at a glance without one wall of lines; each panel
    is titled with the run's label and its effective threshold.

    Args:
        trace: Long trace frame.
        compactions: Optional compaction-event frame (markers per trigger).
        transcript: Which transcript when the trace holds several.
        ncols: Panels per row.
        figure: Figure to draw into (a new one sized for the grid when omitted).
        title: Figure title (default: the transcript id).
    """
    what = "plot_prompt_tokens_grid: trace"
    require_columns(trace, ["transcript", *RUN_KEYS, "request", "prompt_tokens", "threshold_tokens"], what)
    rows, name = select_transcript(trace, transcript, what)
    runs = run_groups(rows)
    labels = run_labels(rows)
    cols = max(1, min(ncols, len(runs)))
    nrows = -(-len(runs) // cols)
    if figure is None:
        figure = Figure(figsize=(4.2 * cols, 2.8 * nrows + 0.6), layout="constrained")
    axes = figure.subplots(nrows, cols, sharex=True, sharey=True, squeeze=False)
    for index, (key, run) in enumerate(runs):
        ax = axes[index // cols][index % cols]
        one = run.assign(engine=key[0], params=key[1])
        plot_prompt_tokens(one, compactions, transcript=name, ax=ax, title="", log=False)
        threshold = int(run["threshold_tokens"].iloc[-1])
        ax.set_title(f"{labels[key]}\nthreshold {threshold:,}", fontsize="small")
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        ax.set_xlabel("request" if index // cols == nrows - 1 else "")
        ax.set_ylabel("prompt tokens" if index % cols == 0 else "")
    for index in range(len(runs), nrows * cols):
        axes[index // cols][index % cols].set_visible(False)
    figure.suptitle(title if title is not None else f"{name}: prompt tokens per request, one panel per run")
    return figure


def plot_dashboard(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    *,
    transcript: str | None = None,
    figure: Figure | None = None,
) -> Figure:
    """The dashboard's four panels: prompt tokens (threshold, compactions), cache hit rate, cumulative
    cost (or prompt tokens when unpriced) and fact retention."""
    if figure is None:
        # A fixed layout: constrained layout measures every label and doubled the redraw time.
        figure = Figure(figsize=(12, 7.5))
        figure.subplots_adjust(left=0.07, right=0.98, bottom=0.07, top=0.95, hspace=0.22, wspace=0.18)
    (tokens, cache), (cost, facts) = figure.subplots(2, 2, sharex=True)
    plot_prompt_tokens(trace, compactions, transcript=transcript, ax=tokens, title="prompt tokens per request")
    plot_cache_hit_rate(trace, transcript=transcript, ax=cache, title="cache hit rate")
    column = cumulative_column(trace)
    plot_cumulative(
        trace,
        transcript=transcript,
        ax=cost,
        title="cumulative cost" if column == "cost_usd" else "cumulative prompt tokens (no cache model)",
    )
    plot_fact_retention(trace, transcript=transcript, ax=facts, title="fact retention")
    return figure


ENGINE_TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("status", "status", "first"),
    ("fact_retention_final", "facts kept (final)", "mean"),
    ("cost_usd", "cost $", "sum"),
    ("cache_hit_rate", "cache hit", "mean"),
    ("prompt_tokens_total", "prompt tokens", "sum"),
    ("prompt_tokens_max", "peak prompt", "max"),
    ("compactions", "compactions", "sum"),
    ("threshold_tokens", "threshold", "max"),
    ("prefix_share", "prefix share", "mean"),
    ("overflows", "overflows", "sum"),
    ("violations", "violations", "sum"),
)
"""Engine-table columns, most important first: (summary column, header, how runs combine)."""


def engine_table(summaries: pd.DataFrame, *, max_columns: int = 9) -> pd.DataFrame:
    """One row per engine run (``engine`` + ``params``) over all transcripts, narrow enough for a
    1,400 px page: the :data:`ENGINE_TABLE_COLUMNS` present, most important first, at most
    ``max_columns`` of them; shares and money rounded for reading."""
    require_columns(summaries, list(RUN_KEYS), "engine_table: summaries")
    present = [(c, h, how) for c, h, how in ENGINE_TABLE_COLUMNS if c in summaries.columns][:max_columns]
    keyed = summaries.assign(_run=_run_label_list(summaries))
    status = (
        keyed.groupby("_run", sort=False)["status"].agg(lambda v: "ok" if (v.astype(str) == "ok").all() else "failed")
        if "status" in keyed.columns
        else None
    )
    out = pd.DataFrame(index=pd.Index(list(dict.fromkeys(keyed["_run"])), name="engine"))
    for column, header, how in present:
        if column == "status":
            if status is not None:
                out[header] = status
            continue
        values = pd.to_numeric(keyed[column], errors="coerce")
        out[header] = values.groupby(keyed["_run"], sort=False).agg(how)
    for column, header, _ in present:
        unit = schema.unit_of(column)
        if unit == "share" and header in out.columns:
            out[header] = out[header].map(lambda v, c=column: schema.format_value(c, v))
        elif unit == "usd" and header in out.columns:  # the header says dollars already
            out[header] = out[header].map(lambda v: "" if pd.isna(v) else f"{v:,.4f}")
    return out.reset_index()


def _run_label_list(frame: pd.DataFrame) -> list[str]:
    labels = run_labels(frame)
    return [labels[(str(e), str(p))] for e, p in zip(frame["engine"], frame["params"], strict=True)]


def _short(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:.2f}M"
    if abs(value) >= 1e4:
        return f"{value / 1e3:.1f}k"
    if abs(value) >= 1 or value == 0:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{value:.4f}"


def figure_png(figure: Figure, dpi: int = 100) -> bytes:
    """PNG bytes of a figure, without the version metadata, so equal figures give equal bytes."""
    buffer = io.BytesIO()
    metadata: dict[str, Any] = {"Software": None}
    figure.savefig(buffer, format="png", dpi=dpi, metadata=metadata)
    return buffer.getvalue()
