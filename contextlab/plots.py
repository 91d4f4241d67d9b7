"""Matplotlib figures drawn from the trace, compaction and summary frames (and nothing else).

Library style: every function takes ``ax=None`` (a fresh :class:`~matplotlib.figure.Figure` is made
when omitted), returns the Figure, and never calls ``plt.show()`` or picks a backend. Figures are
built without pyplot, so they hold no global state and are safe in worker threads; notebooks
display them with ``%matplotlib inline`` (or :func:`figure_png`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from contextlab.errors import ConfigError

RUN_KEYS: tuple[str, ...] = ("engine", "params")
"""Columns that identify one line (one run) within a transcript."""

MARKERS: dict[str, str] = {"manual": "*", "preflight": "v", "pre_api": "v", "post_tool": "v", "overflow": "X"}
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


def _groups(frame: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """Runs in first-appearance order (so colours are stable from call to call)."""
    keyed = frame.assign(_engine=frame["engine"].astype(str), _params=frame["params"].astype(str))
    order = list(dict.fromkeys(zip(keyed["_engine"], keyed["_params"], strict=True)))
    grouped = {k: g for k, g in keyed.groupby(["_engine", "_params"], sort=False)}
    return [(k, grouped[k].drop(columns=["_engine", "_params"]).sort_values("request")) for k in order]


def plot_prompt_tokens(
    trace: pd.DataFrame,
    compactions: pd.DataFrame | None = None,
    *,
    transcript: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
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
    for key, run in _groups(rows):
        x, y = run["request"].to_numpy(), run["prompt_tokens"].to_numpy()
        (line,) = ax.plot(x, y, label=labels[key], linewidth=1.6)
        color = line.get_color()
        ax.plot(x, run["threshold_tokens"].to_numpy(), linestyle="--", linewidth=1, color=color, alpha=0.7)
        by_request = dict(zip(run["request"], run["prompt_tokens"], strict=True))
        if marks is not None:
            passes = marks[(marks["engine"].astype(str) == key[0]) & (marks["params"].astype(str) == key[1])]
            for trigger, events in passes.groupby("trigger", sort=True):
                at = [r for r in events["request"] if r in by_request]
                ax.scatter(
                    at,
                    [by_request[r] for r in at],
                    marker=MARKERS.get(str(trigger), "o"),
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
    ax.plot([], [], linestyle="--", color="grey", label="threshold (dashed)")
    ax.plot([], [], linestyle=":", color="grey", label="context length (dotted)")
    ax.scatter([], [], marker="v", color="grey", edgecolors="black", label="compaction")
    ax.set_xlabel("request")
    ax.set_ylabel("prompt tokens (exact)")
    ax.set_title(title if title is not None else name)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize="small")
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
    trace: pd.DataFrame, *, transcript: str | None = None, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Share of each request's prompt served from cache, one line per run.

    Uses ``cache_read_tokens / prompt_tokens`` when the trace has cache-model columns, otherwise
    ``prefix_tokens / prompt_tokens`` (the common prefix with the previous request: the most any
    prefix cache could hit). The y-label says which.
    """
    what = "plot_cache_hit_rate: trace"
    require_columns(trace, ["transcript", *RUN_KEYS, "request", "prompt_tokens"], what)
    column = hit_rate_column(trace)
    require_columns(trace, [column], what)
    rows, name = select_transcript(trace, transcript, what)
    figure, ax = _axes(ax)
    labels = run_labels(rows)
    for key, run in _groups(rows):
        prompt = run["prompt_tokens"].astype(float)
        rate = (run[column].astype(float) / prompt.where(prompt > 0)).fillna(0.0)
        # Dots help on short runs; on hundreds of requests they only hide the lines.
        marker = "." if len(run) <= 80 else None
        ax.plot(run["request"].to_numpy(), rate.to_numpy(), label=labels[key], linewidth=1.2, marker=marker)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("request")
    ax.set_ylabel(
        "cache hit rate (cache read / prompt)" if column == "cache_read_tokens" else "prefix share (prefix / prompt)"
    )
    ax.set_title(title if title is not None else name)
    ax.legend(loc="best", fontsize="small")
    return figure


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
    for key, run in _groups(rows):
        ax.plot(
            run["request"].to_numpy(),
            run[column].astype(float).fillna(0.0).cumsum().to_numpy(),
            label=labels[key],
        )
    ax.set_xlabel("request")
    ax.set_ylabel("cumulative cost (USD)" if column == "cost_usd" else f"cumulative {column.replace('_', ' ')}")
    ax.set_title(title if title is not None else name)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize="small")
    return figure


def plot_engine_comparison(
    summaries: pd.DataFrame,
    metric: str = "prompt_tokens_total",
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """One bar per engine run (``engine`` + ``params``), summed over transcripts; failed runs hatched.

    Args:
        summaries: Summary frame (one row per transcript x engine x params run).
        metric: Numeric summary column to compare (``prompt_tokens_total``, ``cost_usd``, ...).
        ax: Axes to draw on.
        title: Axes title (default: the metric).
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
    bars = ax.bar(range(len(order)), heights, color=[f"C{i % 10}" for i in range(len(order))])
    for bar, key in zip(bars, order, strict=True):
        if bool(grouped.loc[key, "failed"]):
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    ax.bar_label(
        bars,
        labels=[
            _short(h) + (" (failed)" if grouped.loc[k, "failed"] else "") for h, k in zip(heights, order, strict=True)
        ],
        fontsize="small",
    )
    ax.set_xticks(
        range(len(order)),
        [labels[k] for k in order],
        rotation=20 if len(order) > 3 else 0,
        ha="right" if len(order) > 3 else "center",
    )
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_title(title if title is not None else f"{metric.replace('_', ' ')} by engine")
    return figure


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
