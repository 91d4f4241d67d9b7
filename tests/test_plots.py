"""Plots read only the frames: lines, labels and data match the trace; bad frames name the column."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from contextlab import ConfigError
from contextlab.bench import bench
from contextlab.examples import RecentTurnsEngine, tool_conversation
from contextlab.host.settings import HostSettings
from contextlab.plots import (
    figure_png,
    hit_rate_column,
    plot_cache_hit_rate,
    plot_cumulative,
    plot_engine_comparison,
    plot_prompt_tokens,
)


@pytest.fixture(scope="module")
def sweep():
    settings = HostSettings(context_length=4000, threshold_percent=0.5)
    return bench(
        [tool_conversation(8, 1_800, seed=0)], ["passthrough", RecentTurnsEngine], settings=settings, progress=False
    )


def _lines(figure: Figure) -> dict[str, np.ndarray]:
    ax = figure.axes[0]
    return {line.get_label(): np.asarray(line.get_ydata()) for line in ax.get_lines()}


def test_prompt_tokens_one_line_per_engine_with_data(sweep) -> None:
    figure = plot_prompt_tokens(sweep.trace, sweep.compactions)
    assert isinstance(figure, Figure)
    lines = _lines(figure)
    for engine in ("passthrough", "recent_turns"):
        expected = sweep.trace.loc[sweep.trace["engine"] == engine, "prompt_tokens"].to_numpy()
        assert np.array_equal(lines[engine], expected)
    ax = figure.axes[0]
    assert ax.get_ylabel() == "prompt tokens (exact)"
    assert ax.get_title() == "synthetic"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"passthrough", "recent_turns", "compaction"} <= set(legend)
    # threshold lines carry the trace's threshold_tokens; the window is a horizontal line at 4000
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--" and len(line.get_ydata())]
    assert {float(v) for line in dashed for v in line.get_ydata()} == {2000.0}
    assert any(list(line.get_ydata()) == [4000, 4000] for line in ax.get_lines())


def test_compaction_markers_sit_on_committed_requests(sweep) -> None:
    figure = plot_prompt_tokens(sweep.trace, sweep.compactions)
    committed = sweep.compactions[(sweep.compactions["outcome"] == "committed")]
    assert len(committed) >= 1
    points = np.concatenate([c.get_offsets() for c in figure.axes[0].collections if len(c.get_offsets())])
    assert sorted(points[:, 0].tolist()) == sorted(committed["request"].tolist())
    # without the compaction frame the trace's ``compressed`` rows are marked instead
    bare = plot_prompt_tokens(sweep.trace)
    marked = np.concatenate([c.get_offsets() for c in bare.axes[0].collections if len(c.get_offsets())])
    assert sorted(marked[:, 0].tolist()) == sorted(sweep.trace.loc[sweep.trace["compressed"], "request"].tolist())


def test_draws_on_given_axes_and_never_touches_pyplot(sweep) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    figure = Figure()
    ax = figure.add_subplot()
    assert plot_cache_hit_rate(sweep.trace, ax=ax) is figure
    assert plot_prompt_tokens(sweep.trace) is not figure
    assert plt.get_fignums() == before
    assert matplotlib.get_backend()  # unchanged; nothing here picked one


def test_cache_rate_uses_prefix_then_cache_columns(sweep) -> None:
    trace = sweep.trace
    assert hit_rate_column(trace) == "prefix_tokens"
    figure = plot_cache_hit_rate(trace)
    expected = (trace["prefix_tokens"] / trace["prompt_tokens"])[trace["engine"] == "passthrough"].to_numpy()
    assert np.allclose(_lines(figure)["passthrough"], expected)
    assert "prefix" in figure.axes[0].get_ylabel()
    cached = trace.assign(cache_read_tokens=trace["prompt_tokens"] // 2)
    figure = plot_cache_hit_rate(cached)
    assert "cache read" in figure.axes[0].get_ylabel()
    assert np.allclose(_lines(figure)["passthrough"], 0.5, atol=0.05)


def test_cumulative_prompt_tokens_or_cost(sweep) -> None:
    trace = sweep.trace
    figure = plot_cumulative(trace)
    ys = _lines(figure)["recent_turns"]
    assert ys[-1] == trace.loc[trace["engine"] == "recent_turns", "prompt_tokens"].sum()
    priced = trace.assign(cost_usd=0.001)
    figure = plot_cumulative(priced)
    assert figure.axes[0].get_ylabel() == "cumulative cost (USD)"
    assert _lines(figure)["passthrough"][-1] == pytest.approx(0.001 * (trace["engine"] == "passthrough").sum())


def test_engine_comparison_bars_and_failed_hatching(sweep) -> None:
    summaries = pd.concat(
        [
            sweep.summaries,
            pd.DataFrame(
                [
                    {
                        "engine": "broken",
                        "params": "ctx=4000,pct=0.5",
                        "status": "failed",
                        "prompt_tokens_total": 0,
                    }
                ]
            ),
        ],
        ignore_index=True,
    )
    figure = plot_engine_comparison(summaries)
    ax = figure.axes[0]
    heights = [bar.get_height() for bar in ax.patches]
    assert heights[:2] == sweep.summaries["prompt_tokens_total"].tolist()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["passthrough", "recent_turns", "broken"]
    assert ax.patches[2].get_hatch() == "//" and ax.patches[0].get_hatch() is None


@pytest.mark.parametrize(
    ("call", "column"),
    [
        (lambda t: plot_prompt_tokens(t.drop(columns=["threshold_tokens"])), "threshold_tokens"),
        (lambda t: plot_cache_hit_rate(t.drop(columns=["prefix_tokens"])), "prefix_tokens"),
        (lambda t: plot_cumulative(t.drop(columns=["engine"])), "engine"),
        (lambda t: plot_engine_comparison(t.drop(columns=["params"])), "params"),
    ],
)
def test_missing_column_is_named(sweep, call, column) -> None:
    with pytest.raises(ConfigError, match=f"missing column '{column}'"):
        call(sweep.trace)


def test_several_transcripts_need_a_choice() -> None:
    result = bench(
        [tool_conversation(8, 1_800, seed=0, name="a"), tool_conversation(8, 1_800, seed=1, name="b")],
        ["passthrough"],
        progress=False,
    )
    with pytest.raises(ConfigError, match="2 transcripts"):
        plot_prompt_tokens(result.trace)
    assert plot_prompt_tokens(result.trace, transcript="b").axes[0].get_title() == "b"
    with pytest.raises(ConfigError, match="'c' is not in the trace"):
        plot_prompt_tokens(result.trace, transcript="c")


def test_png_bytes_are_deterministic(sweep) -> None:
    one = figure_png(plot_prompt_tokens(sweep.trace, sweep.compactions))
    two = figure_png(plot_prompt_tokens(sweep.trace, sweep.compactions))
    assert one[:8] == b"\x89PNG\r\n\x1a\n" and one == two


def test_threshold_lines_carry_the_effective_threshold_in_the_legend(sweep) -> None:
    from contextlab.plots import effective_thresholds

    legend = [t.get_text() for t in plot_prompt_tokens(sweep.trace).axes[0].get_legend().get_texts()]
    assert "recent_turns threshold 2,000" in legend
    assert effective_thresholds(sweep.trace) == {"passthrough": 2000, "recent_turns": 2000}


def test_request_ticks_are_integers(sweep) -> None:
    figure = plot_prompt_tokens(sweep.trace)
    figure_png(figure)  # draw, so the locator has placed its ticks
    ticks = figure.axes[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks)


def test_log_axis_when_one_run_dwarfs_the_rest() -> None:
    from contextlab.plots import wants_log

    rows = []
    for engine, scale in (("big", 100_000), ("small", 1_000)):
        for request in range(5):
            rows.append(
                {
                    "transcript": "t",
                    "engine": engine,
                    "params": "",
                    "request": request,
                    "prompt_tokens": scale * (request + 1),
                    "threshold_tokens": scale * 10,
                    "context_length": scale * 20,
                    "compressed": False,
                }
            )
    trace = pd.DataFrame(rows)
    assert wants_log([500_000, 5_000]) and not wants_log([500_000, 100_000])
    assert plot_prompt_tokens(trace).axes[0].get_yscale() == "log"
    assert plot_prompt_tokens(trace, log=False).axes[0].get_yscale() == "linear"
    summaries = pd.DataFrame(
        {"engine": ["big", "small"], "params": ["", ""], "cost_usd": [100.0, 1.0], "status": ["ok", "ok"]}
    )
    assert plot_engine_comparison(summaries, "cost_usd").axes[0].get_yscale() == "log"
    ratio = plot_engine_comparison(summaries, "cost_usd", baseline="small").axes[0]
    assert ratio.get_yscale() == "linear" and ratio.get_ylabel() == "cost usd (x small)"
    assert [p.get_height() for p in ratio.patches] == [100.0, 1.0]


def test_legend_moves_outside_with_many_runs() -> None:
    from contextlab.plots import LEGEND_OUTSIDE_AT

    rows = [
        {
            "transcript": "t",
            "engine": f"e{i}",
            "params": "",
            "request": r,
            "prompt_tokens": 100 + r + i,
            "threshold_tokens": 500,
            "context_length": 1000,
            "compressed": False,
        }
        for i in range(LEGEND_OUTSIDE_AT)
        for r in range(3)
    ]
    legend = plot_prompt_tokens(pd.DataFrame(rows)).axes[0].get_legend()
    assert legend.get_bbox_to_anchor().x0 > legend.axes.bbox.x1 - 1  # anchored right of the axes


def test_small_multiples_one_panel_per_run(sweep) -> None:
    from contextlab.plots import plot_prompt_tokens_grid

    figure = plot_prompt_tokens_grid(sweep.trace, sweep.compactions, ncols=1)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["passthrough\nthreshold 2,000", "recent_turns\nthreshold 2,000"]
    for ax, engine in zip(visible, ("passthrough", "recent_turns"), strict=True):
        expected = sweep.trace.loc[sweep.trace["engine"] == engine, "prompt_tokens"].to_numpy()
        assert np.array_equal(np.asarray(ax.get_lines()[0].get_ydata()), expected)


def test_cache_dips_are_explained_by_the_trace_row() -> None:
    from contextlab.plots import cache_dips

    run = pd.DataFrame(
        {
            "request": [0, 1, 2, 3, 4, 5],
            "prompt_tokens": [100] * 6,
            "prefix_tokens": [0, 90, 10, 90, 5, 90],
            "compressed": [False, False, True, False, False, False],
            "pruned": [False] * 6,
            "select_context_used": [False] * 6,
            "timestamp": [0.0, 10.0, 20.0, 30.0, 400.0, 410.0],
        }
    )
    dips = cache_dips(run)
    assert [(d.request, d.cause) for d in dips] == [(2, "compaction"), (4, "TTL expiry")]
    assert dips[0].drop == pytest.approx(0.8)


def test_sweep_cache_plot_labels_compaction_dips(sweep) -> None:
    figure = plot_cache_hit_rate(sweep.trace)
    texts = {t.get_text() for t in figure.axes[0].texts}
    legend = {t.get_text() for t in figure.axes[0].get_legend().get_texts()}
    assert "compaction" in texts and "dip: compaction" in legend


def test_dashboard_figure_and_fact_retention_without_facts(sweep) -> None:
    from contextlab.plots import plot_dashboard

    figure = plot_dashboard(sweep.trace, sweep.compactions)
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == [
        "prompt tokens per request",
        "cache hit rate",
        "cumulative prompt tokens (no cache model)",
        "fact retention",
    ]
    assert "no gold facts" in figure.axes[3].texts[0].get_text()


def test_engine_table_most_important_columns_first(sweep) -> None:
    from contextlab.plots import engine_table

    table = engine_table(sweep.summaries)
    assert list(table.columns) == [
        "engine",
        "status",
        "prompt tokens",
        "peak prompt",
        "compactions",
        "threshold",
        "prefix share",
        "overflows",
        "violations",
    ]
    assert table["engine"].tolist() == ["passthrough", "recent_turns"]
    totals = sweep.summaries.set_index("engine")["prompt_tokens_total"]
    assert table.set_index("engine")["prompt tokens"].to_dict() == totals.to_dict()
    assert engine_table(sweep.summaries, max_columns=3).columns.tolist() == [
        "engine",
        "status",
        "prompt tokens",
        "peak prompt",
    ]
