"""The dashboard headless: setting a control's ``.value`` re-runs the library and changes the result."""

from __future__ import annotations

import pytest

from contextlab import ConfigError
from contextlab.examples import RecentTurnsEngine, tool_conversation
from contextlab.widgets import Dashboard


@pytest.fixture()
def dashboard() -> Dashboard:
    transcripts = [tool_conversation(10, 1_800, seed=0, name="long"), tool_conversation(3, 1_800, seed=4, name="short")]
    return Dashboard(
        transcripts,
        ["passthrough", RecentTurnsEngine],
        context_lengths=(4000, 8000),
        threshold_percent=0.75,
    )


def _summary(d: Dashboard, engine: str, column: str):
    assert d.result is not None
    rows = d.result.summaries
    return rows.loc[rows["engine"] == engine, column].item()


def test_initial_render(dashboard: Dashboard) -> None:
    assert dashboard.threshold.continuous_update is False
    assert dashboard.refreshes == 1 and dashboard.error is None
    assert set(dashboard.result.summaries["engine"]) == {"passthrough", "recent_turns"}
    assert _summary(dashboard, "recent_turns", "threshold_tokens") == 3000
    assert dashboard.figure is not None
    assert {line.get_label() for line in dashboard.figure.axes[0].get_lines()} >= {
        "passthrough",
        "recent_turns",
    }


def test_threshold_slider_changes_the_replay(dashboard: Dashboard) -> None:
    before = _summary(dashboard, "recent_turns", "compactions")
    dashboard.threshold.value = 0.3
    assert dashboard.refreshes == 2
    assert _summary(dashboard, "recent_turns", "threshold_tokens") == 1200
    assert _summary(dashboard, "recent_turns", "compactions") > before
    assert dashboard.result.trace["threshold_tokens"].eq(1200).all()


def test_context_length_transcript_and_engine_pickers(dashboard: Dashboard) -> None:
    dashboard.context_length.value = 8000
    assert _summary(dashboard, "passthrough", "context_length") == 8000
    dashboard.transcript.value = "short"
    assert set(dashboard.result.trace["transcript"]) == {"short"}
    dashboard.engine_picker.value = ("recent_turns",)
    assert dashboard.result.summaries["engine"].tolist() == ["recent_turns"]
    dashboard.engine_picker.value = ()
    assert dashboard.result is None and dashboard.error == "select at least one engine"


def test_focus_topic_becomes_a_manual_compress(dashboard: Dashboard) -> None:
    dashboard.context_length.value = 8000
    dashboard.threshold.value = 1.0  # no automatic compaction, so only the manual one fires
    dashboard.focus_turn.value = 5
    assert dashboard.result.compactions.empty
    dashboard.focus.value = "record 2"
    events = dashboard.result.compactions
    manual = events[events["trigger"] == "manual"]
    assert set(manual["engine"]) == {"passthrough", "recent_turns"}
    assert manual["focus_topic"].eq("record 2").all()
    assert manual.loc[manual["engine"] == "recent_turns", "outcome"].item() == "committed"
    assert dashboard.current_settings().manual_compactions == {5: "record 2"}
    dashboard.focus.value = "  "
    assert dashboard.result.compactions.empty


def test_output_widget_shows_plot_and_table(dashboard: Dashboard) -> None:
    # Outside a kernel the Output widget cannot capture; the dashboard still keeps what it drew.
    assert dashboard.widget.children[-1] is dashboard.out
    assert dashboard.figure is not None


def test_bad_construction() -> None:
    with pytest.raises(ConfigError, match="no transcripts"):
        Dashboard([], ["passthrough"])
    with pytest.raises(ConfigError, match="no engines"):
        Dashboard([tool_conversation(8, 1_800, seed=0)], [])


def test_cache_observer_columns_reach_the_table() -> None:
    from contextlab import CacheObserver
    from contextlab.widgets import summary_table

    dashboard = Dashboard(
        [tool_conversation(8, 1_800, seed=0)],
        ["passthrough"],
        context_lengths=(8000,),
        observers=[CacheObserver(["anthropic:claude-sonnet-5-5"])],
    )
    table = summary_table(dashboard.result.summaries)
    assert "cache_hit_rate" in table.columns and "cost_usd" in table.columns
    assert "error" not in table.columns  # all runs ok: the column would only say None
    assert 0 < table["cache_hit_rate"].item() < 1


def test_focus_turn_is_bounded_by_the_transcript(dashboard: Dashboard) -> None:
    assert dashboard.focus_turn.max == 9  # "long": 10 turns
    refreshes = dashboard.refreshes
    dashboard.focus_turn.value = 8
    dashboard.transcript.value = "short"  # 3 turns: the box is clamped, and only one replay runs
    assert dashboard.focus_turn.max == 2 and dashboard.focus_turn.value == 2
    assert dashboard.refreshes == refreshes + 2
    assert set(dashboard.result.trace["transcript"]) == {"short"}


def test_readout_shows_each_engines_effective_threshold(dashboard: Dashboard) -> None:
    assert "recent_turns</b> 3,000 tokens (75% of 4,000)" in dashboard.readout.value
    dashboard.threshold.value = 0.3
    assert "recent_turns</b> 1,200 tokens (30% of 4,000)" in dashboard.readout.value


def test_readout_names_the_hosts_floor_for_the_compressor() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = Dashboard(
            [tool_conversation(8, 1_800, seed=0)], ["compressor"], context_lengths=(32_000,), threshold_percent=0.5
        )
    assert "compressor</b> 27,200 tokens (85% of 32,000) <i>(the host&#x27;s floor)</i>" in d.readout.value
    assert _summary(d, "compressor", "threshold_tokens") == 27_200


def test_provider_picker_adds_the_cache_model(dashboard: Dashboard) -> None:
    assert "cache_hit_rate" not in dashboard.result.summaries.columns
    dashboard.provider.value = "openai:gpt-5.5"
    summaries = dashboard.result.summaries
    assert summaries["cache_profile"].eq("openai:gpt-5.5").all()
    assert (summaries["cost_usd"] > 0).all()
    assert dashboard.figure is not None and dashboard.figure.axes[2].get_ylabel() == "cumulative cost (USD)"


def test_going_back_to_a_setting_reuses_its_replay(dashboard: Dashboard) -> None:
    replays = dashboard.replays
    dashboard.threshold.value = 0.5
    dashboard.threshold.value = 0.75
    assert dashboard.replays == replays + 1 and dashboard.refreshes == 3
    assert _summary(dashboard, "recent_turns", "threshold_tokens") == 3000


def test_four_panels_and_focus_suggestions(dashboard: Dashboard) -> None:
    assert [ax.get_title() for ax in dashboard.figure.axes] == [
        "prompt tokens per request",
        "cache hit rate",
        "cumulative prompt tokens (no cache model)",
        "fact retention",
    ]
    from contextlab.focus import suggest_focus_topics

    assert list(dashboard.focus.options) == suggest_focus_topics(dashboard.transcripts["long"])
    dashboard.transcript.value = "short"
    assert list(dashboard.focus.options) == suggest_focus_topics(dashboard.transcripts["short"])


def test_compress_now_previews_what_each_engine_keeps(dashboard: Dashboard) -> None:
    dashboard.focus_turn.value = 8
    dashboard.focus.value = "record 2"
    dashboard.compress_now.click()
    assert set(dashboard.preview) == {"passthrough", "recent_turns"}
    sliding = dashboard.preview["recent_turns"]
    assert sliding.of("dropped") and sliding.turn == 8 and sliding.focus == "record 2"
    assert dashboard.preview["passthrough"].note == "the engine changed nothing"
    from contextlab.widgets import preview_html

    markup = preview_html(dashboard.preview)
    assert "recent_turns</b>: compress before turn 8 with focus &#x27;record 2&#x27;" in markup
    assert f"dropped {len(sliding.of('dropped'))} (" in markup


def test_the_host_picker_replays_under_the_other_host(dashboard: Dashboard) -> None:
    """0.19.0's gates read the rough estimate alone: the pressure column is the rough one."""
    assert dashboard.host.value == "newest"
    dashboard.host.value = "0.19.0"
    assert dashboard.refreshes == 2 and dashboard.error is None
    trace = dashboard.result.trace
    assert trace["params"].str.contains("hermes=0.19.0").all()
    assert (trace["pressure_tokens"] == trace["prompt_tokens_rough"]).all()
