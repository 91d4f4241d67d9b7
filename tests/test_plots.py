"""Plots read only the frames: lines, labels and data match the trace; bad frames name the column."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from contextlab import ConfigError
from contextlab.bench import bench
from contextlab.host.settings import HostSettings
from contextlab.plots import (
    figure_png,
    hit_rate_column,
    plot_cache_hit_rate,
    plot_cumulative,
    plot_engine_comparison,
    plot_prompt_tokens,
)
from tests.synthetic import SlidingWindowEngine, make_transcript


@pytest.fixture(scope="module")
def sweep():
    settings = HostSettings(context_length=4000, threshold_percent=0.5)
    return bench([make_transcript()], ["passthrough", SlidingWindowEngine], settings=settings, progress=False)


def _lines(figure: Figure) -> dict[str, np.ndarray]:
    ax = figure.axes[0]
    return {line.get_label(): np.asarray(line.get_ydata()) for line in ax.get_lines()}


def test_prompt_tokens_one_line_per_engine_with_data(sweep) -> None:
    figure = plot_prompt_tokens(sweep.trace, sweep.compactions)
    assert isinstance(figure, Figure)
    lines = _lines(figure)
    for engine in ("passthrough", "sliding_window"):
        expected = sweep.trace.loc[sweep.trace["engine"] == engine, "prompt_tokens"].to_numpy()
        assert np.array_equal(lines[engine], expected)
    ax = figure.axes[0]
    assert ax.get_ylabel() == "prompt tokens (exact)"
    assert ax.get_title() == "synthetic"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"passthrough", "sliding_window", "compaction"} <= set(legend)
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
    ys = _lines(figure)["sliding_window"]
    assert ys[-1] == trace.loc[trace["engine"] == "sliding_window", "prompt_tokens"].sum()
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
    assert [t.get_text() for t in ax.get_xticklabels()] == ["passthrough", "sliding_window", "broken"]
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
    result = bench([make_transcript(name="a"), make_transcript(name="b", seed=1)], ["passthrough"], progress=False)
    with pytest.raises(ConfigError, match="2 transcripts"):
        plot_prompt_tokens(result.trace)
    assert plot_prompt_tokens(result.trace, transcript="b").axes[0].get_title() == "b"
    with pytest.raises(ConfigError, match="'c' is not in the trace"):
        plot_prompt_tokens(result.trace, transcript="c")


def test_png_bytes_are_deterministic(sweep) -> None:
    one = figure_png(plot_prompt_tokens(sweep.trace, sweep.compactions))
    two = figure_png(plot_prompt_tokens(sweep.trace, sweep.compactions))
    assert one[:8] == b"\x89PNG\r\n\x1a\n" and one == two
