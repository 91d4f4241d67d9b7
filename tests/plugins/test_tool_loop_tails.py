"""``summary``, ``hybrid`` and ``lcm`` in single-turn tool loops (SWE-bench style): their tails are
bounded by tokens as well as messages, so they compact whenever compaction is possible."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contextlab import HostSettings, load_transcript, replay
from contextlab.engines.handoff import Handoff
from contextlab.engines.parts import TokenEstimator
from contextlab.transcripts import Transcript
from tests.plugins.engine_helpers import load, tool_session

TRAJECTORY = "mini-swe-agent/trajs/psf__requests-1142.traj.json"


def as_tool_loop(transcript: Transcript) -> Transcript:
    """mini-swe-agent's rows with each command a ``bash`` tool call and each observation its result:
    one user message, then one assistant call and one tool result per step (how SWE-agent and
    OpenHands record the same loop)."""
    messages = [transcript.messages[0]]
    pending: str | None = None
    for i, message in enumerate(transcript.messages[1:], start=1):
        if message["role"] == "assistant":
            command = re.findall(r"```bash\n(.*?)```", str(message.get("content") or ""), re.S)
            pending = f"call_{i}"
            call = {
                "id": pending,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command[0] if command else ""})},
            }
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": [call]})
        elif message["role"] == "user" and pending is not None:
            messages.append({"role": "tool", "tool_call_id": pending, "content": message["content"]})
            pending = None
        else:
            messages.append(message)
    return Transcript(f"{transcript.transcript_id}-loop", messages, system_prompt=transcript.system_prompt)


@pytest.mark.parametrize("name", ["summary", "hybrid", "lcm"])
def test_a_real_single_turn_tool_loop_compacts_and_never_overflows(shared_transcripts: Path, name: str) -> None:
    loop = as_tool_loop(load_transcript(shared_transcripts / TRAJECTORY))
    assert [m["role"] for m in loop.messages].count("user") == 1 and loop.n_requests > 60
    # The outputs as recorded: the engines' tails are what is measured, not the host's spills of
    # the largest outputs (with them `lcm` needs 9 passes instead of 12, and none overflows either).
    result = replay(loop, name, HostSettings(context_length=8_000, tool_results="recorded"))
    summary = result.summary
    # With message-count tails the first passes were no-ops, the host stopped asking for the rest
    # of the (only) turn, and 62 of 71 requests overflowed.
    assert summary["compactions"] >= 10, summary
    assert summary["overflows"] == 0
    assert result.trace["over_threshold"].mean() < 0.1


def test_handoff_tail_is_bounded_by_tokens_but_keeps_the_newest_group() -> None:
    history = tool_session(12, lines=200)
    estimator = TokenEstimator()
    handoff = Handoff(tail_messages=20, max_tail_tokens=3_000)
    start = handoff.tail_start(history, 1)
    assert estimator.messages(history[start:]) <= 3_000 + estimator.messages(history[-2:])
    assert start <= len(history) - 2  # the newest call and its result stay together
    tiny = Handoff(tail_messages=20, max_tail_tokens=1)
    assert tiny.tail_start(history, 1) == len(history) - 2


@pytest.mark.parametrize("name", ["summary", "hybrid"])
def test_a_short_tool_loop_over_the_threshold_is_compacted_not_skipped(name: str) -> None:
    engine = load(name, context_length=16_000)
    history = tool_session(10, lines=200)  # 21 messages: a 20-message tail would cover all of them
    tokens = TokenEstimator().messages(history)
    assert tokens > engine.threshold_tokens
    result = engine.compress(history, current_tokens=tokens)
    assert result is not history
    assert TokenEstimator().messages(result) < engine.threshold_tokens
