"""Focus-topic suggestions and the "compress now" preview (pure functions behind the dashboard)."""

from __future__ import annotations

import pytest

import contextlab
from contextlab import ConfigError
from contextlab.examples import RecentTurnsEngine, tool_conversation
from contextlab.focus import compress_preview, history_before_turn, suggest_focus_topics
from contextlab.host.settings import HostSettings
from contextlab.transcripts import Transcript


def test_suggestions_are_names_the_conversation_repeats() -> None:
    messages = [
        {"role": "user", "content": "The test in tests/test_parser.py fails with ValueError in parse_header"},
        {"role": "assistant", "content": "Looking at src/parser.py and parse_header"},
        {"role": "user", "content": "parse_header still fails; also see JIRA-42"},
        {"role": "assistant", "content": "Fixed JIRA-42 in src/parser.py once"},
    ]
    transcript = Transcript(transcript_id="t", messages=messages)
    topics = suggest_focus_topics(transcript)
    # parse_header: 2 user mentions (x2) + 1 assistant = 5; JIRA-42: 2 + 1 = 3; src/parser.py: 2
    assert topics[:3] == ["parse_header", "JIRA-42", "src/parser.py"]
    assert "tests/test_parser.py" not in topics  # one message only, however heavily weighted
    assert suggest_focus_topics(transcript, limit=1) == ["parse_header"]


def test_suggestions_on_a_bundled_dataset_are_stable() -> None:
    transcript = contextlab.load_dataset("coding-agent-short")
    first = suggest_focus_topics(transcript)
    assert first and first == suggest_focus_topics(transcript)
    text = "\n".join(str(m.get("content")) for m in transcript.messages)
    assert all(topic in text for topic in first)


def test_history_before_turn_and_bad_turns() -> None:
    transcript = tool_conversation(4, 1_800, seed=0)
    assert history_before_turn(transcript, 0) == []
    second = history_before_turn(transcript, 2)
    assert second and second[-1]["role"] in ("assistant", "tool")
    assert sum(1 for m in second if m["role"] == "user") == 2
    with pytest.raises(ConfigError, match=r"has turns 0\.\.3"):
        history_before_turn(transcript, 4)


def test_preview_shows_kept_dropped_and_added() -> None:
    transcript = tool_conversation(8, 1_800, seed=0)
    preview = compress_preview(
        transcript,
        RecentTurnsEngine,
        HostSettings(context_length=4000, threshold_percent=0.5),
        turn=6,
        focus="record 2",
        params={"keep_turns": 4},
    )
    history = history_before_turn(transcript, 6)
    kept, dropped = preview.of("kept"), preview.of("dropped")
    assert len(kept) + len(dropped) == len(history)
    assert dropped and kept
    assert preview.tokens_after < preview.tokens_before
    assert {r.index for r in kept} | {r.index for r in dropped} == set(range(len(history)))
    assert preview.engine == "recent_turns" and preview.focus == "record 2" and preview.note == ""


def test_preview_of_an_engine_that_does_nothing() -> None:
    transcript = tool_conversation(3, 1_800, seed=0)
    preview = compress_preview(transcript, "passthrough", turn=2, focus="")
    assert preview.of("dropped") == [] and preview.of("added") == []
    assert preview.note == "the engine changed nothing"
