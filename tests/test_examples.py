"""Example data lookup and the teaching engine used by the notebooks and the dashboard."""

from __future__ import annotations

import pytest

from contextlab import ConfigError, replay
from contextlab.examples import RecentTurnsEngine, example_transcripts, shared_transcripts_dir
from tests.synthetic import make_transcript


def test_missing_data_is_a_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CONTEXTLAB_TRANSCRIPTS", str(tmp_path))
    monkeypatch.setattr("contextlab.examples.REPO", tmp_path / "nowhere" / "repo")
    with pytest.raises(ConfigError, match="set CONTEXTLAB_TRANSCRIPTS"):
        example_transcripts()


def test_finds_tau_bench_longest_first(shared_transcripts, monkeypatch) -> None:
    monkeypatch.setenv("CONTEXTLAB_TRANSCRIPTS", str(shared_transcripts))
    assert shared_transcripts_dir() == shared_transcripts
    found = example_transcripts(limit=3)
    assert len(found) == 3 and found[0].transcript_id == "tau-bench-3-0"
    assert [t.n_requests for t in found] == sorted((t.n_requests for t in found), reverse=True)
    assert len(example_transcripts(longest=False)) == 200


def test_recent_turns_cuts_only_at_turn_boundaries() -> None:
    transcript = make_transcript(turns=10)
    result = replay(transcript, RecentTurnsEngine, params={"keep_turns": 2}, context_length=4000, threshold_percent=0.5)
    assert result.status == "ok" and result.summary["compactions"] >= 2
    assert result.summary["violations"] == 0
    assert result.trace["prompt_tokens"].max() < 4000


def test_recent_turns_focus_marker_and_no_op() -> None:
    engine = RecentTurnsEngine(keep_turns=1)
    messages = make_transcript(turns=3).messages
    out = engine.compress(messages, focus_topic="record 1")
    assert out[0]["role"] == "user" and out[0]["content"].startswith(
        "[context trimmed: 8 earlier messages dropped; focus: record 1]"
    )
    assert out[1:] == messages[9:] and engine.compression_count == 1
    short = messages[:4]
    assert engine.compress(short) is short  # nothing safe to drop: same object, the host's "no-op"
    with pytest.raises(ValueError, match="keep_turns"):
        RecentTurnsEngine(keep_turns=0)
