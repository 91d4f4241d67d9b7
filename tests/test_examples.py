"""The shared conversation generator, the teaching engine, and the example-data lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextlab import ConfigError, replay
from contextlab.examples import RecentTurnsEngine, example_transcripts, shared_transcripts_dir, tool_conversation
from contextlab.messages import validate_messages


def test_missing_data_is_a_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CONTEXTLAB_TRANSCRIPTS", str(tmp_path))
    with pytest.raises(ConfigError, match="set CONTEXTLAB_TRANSCRIPTS"):
        example_transcripts()


def test_the_library_never_guesses_a_workspace_folder(monkeypatch, shared_transcripts: Path) -> None:
    # Even with ../shared beside the checkout, nothing is found unless it is named.
    monkeypatch.delenv("CONTEXTLAB_TRANSCRIPTS", raising=False)
    assert shared_transcripts_dir() is None
    with pytest.raises(ConfigError, match=r"\$CONTEXTLAB_TRANSCRIPTS/tau-bench-airline"):
        example_transcripts()
    assert shared_transcripts_dir(shared_transcripts) == shared_transcripts
    assert len(example_transcripts(limit=2, folder=shared_transcripts)) == 2


def test_finds_tau_bench_longest_first(shared_transcripts, monkeypatch) -> None:
    monkeypatch.setenv("CONTEXTLAB_TRANSCRIPTS", str(shared_transcripts))
    assert shared_transcripts_dir() == shared_transcripts
    found = example_transcripts(limit=3)
    assert len(found) == 3 and found[0].transcript_id == "tau-bench-3-0"
    assert [t.n_requests for t in found] == sorted((t.n_requests for t in found), reverse=True)
    assert len(example_transcripts(longest=False)) == 200


def test_tool_conversation_shape_and_seeds() -> None:
    plain = tool_conversation(3, 60)
    assert [m["role"] for m in plain.messages] == ["user", "assistant", "tool", "assistant"] * 3
    assert plain.n_requests == 6 and validate_messages(plain.messages) == []
    assert plain.messages[2]["content"] == "# file_0.py\n" + "x = 1\n" * 10
    chat = tool_conversation(2, with_tools=False, system=None)
    assert [m["role"] for m in chat.messages] == ["user", "assistant"] * 2 and chat.system_prompt is None
    # Seeds vary the tool text (so resumable sweeps key transcripts apart) and repeat exactly.
    one, again, other = (tool_conversation(2, 300, seed=s).messages[2]["content"] for s in (1, 1, 2))
    assert one == again != other and len(one) >= 300


def test_recent_turns_cuts_only_at_turn_boundaries() -> None:
    transcript = tool_conversation(10, 1_800, seed=0)
    result = replay(transcript, RecentTurnsEngine, params={"keep_turns": 2}, context_length=4000, threshold_percent=0.5)
    assert result.status == "ok" and result.summary["compactions"] >= 2
    assert result.summary["violations"] == 0
    assert result.trace["prompt_tokens"].max() < 4000


def test_recent_turns_focus_marker_and_no_op() -> None:
    engine = RecentTurnsEngine(keep_turns=1)
    messages = tool_conversation(3, seed=0).messages
    out = engine.compress(messages, focus_topic="file_1.py")
    assert out[0]["role"] == "user" and out[0]["content"].startswith(
        "[context trimmed: 8 earlier messages dropped; focus: file_1.py]"
    )
    assert out[1:] == messages[9:] and engine.compression_count == 1
    short = messages[:4]
    assert engine.compress(short) is short  # nothing safe to drop: same object, the host's "no-op"
    with pytest.raises(ValueError, match="keep_turns"):
        RecentTurnsEngine(keep_turns=0)
