"""Calibration against recorded usage: the real Claude Code sessions and mini-swe-agent runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextlab.cache.plots import plot_calibration
from contextlab.calibrate import RecordedCompactions, calibrate, calibrate_many
from contextlab.transcripts import Transcript
from contextlab.transcripts.model import CompactionEvent, RecordedUsage

LONG_SESSIONS = [
    "258c7280-ae70-4798-800f-63464d01a85d",
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
]


@pytest.mark.parametrize("session", LONG_SESSIONS)
def test_claude_code_read_share_within_five_points(shared_transcripts: Path, session: str) -> None:
    result = calibrate(shared_transcripts / "claude-code" / f"{session}.jsonl")
    s = result.summary
    assert s["profile"] == "anthropic:claude-opus-4-6" and s["policy"] == "claude_code"
    assert s["requests"] == s["requests_with_usage"] > 100
    assert abs(s["share_error_pp"]) <= 5.0, s
    # The log omits Claude Code's system prompt and tool schemas (~26k tokens on the first call).
    assert 20_000 < s["unseen_prefix_tokens"] < 32_000
    assert s["compactions_applied"] == 1
    frame = result.frame
    # The recorded compaction really shrinks the replayed request, as it did in the session.
    assert frame["simulated_total"].diff().min() < -50_000


def test_mini_swe_agent_gemini_runs(shared_transcripts: Path) -> None:
    paths = sorted((shared_transcripts / "mini-swe-agent" / "trajs").glob("*.json"))[:8]
    table, results = calibrate_many(paths)
    assert len(results) == 8
    assert (table["profile"] == "gemini:gemini-3-pro-preview").all()
    assert table["hit_prob_fitted"].all()
    assert abs(table["share_error_pp"].mean()) < 5.0, table[["transcript", "share_error_pp"]]
    assert (table["recorded_read_share"] > 0.5).all()


def test_recorded_compactions_engine_keeps_system_and_everything_from_the_summary() -> None:
    engine = RecordedCompactions(frozenset({"SUMMARY"}))
    request = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "SUMMARY"},
        {"role": "assistant", "content": "new"},
    ]
    assert engine.select_context(request) == [request[0], *request[3:]]
    assert engine.select_context(request[:3]) is None
    marked = [
        {"role": "user", "content": "x", "display_kind": "compact_summary"},
        {"role": "assistant", "content": "y"},
    ]
    assert engine.select_context([{"role": "user", "content": "a"}, *marked]) == marked


def test_calibrate_a_synthetic_recording_with_a_compaction() -> None:
    messages = []
    usage = {}
    for i in range(10):
        messages.append({"role": "user", "content": f"question {i} " + "words " * 300})
        messages.append({"role": "assistant", "content": f"answer {i} " + "more " * 100})
    messages.insert(10, {"role": "user", "content": "SUMMARY of the first five turns"})
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            usage[index] = RecordedUsage(
                prompt_tokens=1000,
                raw={
                    "prompt_tokens": 1000 + index,
                    "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 0},
                },
            )
    t = Transcript(
        "synthetic",
        messages,
        usage=usage,
        model="gpt-4o",
        events=[CompactionEvent(10, "auto", summary="SUMMARY of the first five turns")],
    )
    result = calibrate(t)
    assert result.summary["profile"] == "openai:gpt-4o"
    assert result.summary["recorded_read_share"] == 0.0
    assert result.summary["simulated_read_share"] > 0.5
    figure = plot_calibration(result.frame, title="synthetic")
    assert len(figure.axes[0].lines) == 3
