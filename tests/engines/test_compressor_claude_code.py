"""The compressor on the 5 real Claude Code sessions at a 200,000 window (``../shared/transcripts``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_code_replays import SESSIONS, WINDOW, replay_session


@pytest.mark.parametrize("session", SESSIONS)
def test_claude_code_session(shared_transcripts: Path, session: str) -> None:
    report = replay_session(shared_transcripts / "claude-code" / f"{session}.jsonl")
    assert report.threshold == 150_000  # 0.50 raised to 0.75 below 512K
    assert 20_000 < report.overhead < 40_000  # the unseen system prompt and tool schemas
    assert report.violations == 0  # no structural violation in any request
    assert (report.trace["prompt_tokens"] <= WINDOW).all()
    compactions = report.compactions
    assert len(compactions) >= 1
    automatic = compactions[compactions["trigger"] != "manual"]
    if report.first_crossing is None:
        assert automatic.empty
    else:
        # The first automatic compaction fires at the request where the estimate first crosses.
        assert int(automatic["request"].iloc[0]) == report.first_crossing
    for row in compactions.itertuples():
        assert row.prompt_after < report.threshold
        assert row.prompt_after < row.prompt_before
    # Claude Code compacted too (auto at ~167K billed tokens, or by hand); the manual one is replayed.
    assert report.claude_code
    for _, request, trigger, pre_tokens, _, _ in report.claude_code:
        assert pre_tokens is not None and pre_tokens > 100_000
        if trigger == "manual":
            assert request in set(compactions["request"])
