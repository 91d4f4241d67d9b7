"""mini-swe-agent trajectories: faithful user-role observations, recorded usage, real runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextlab.errors import TranscriptError
from contextlab.messages import validate_messages
from contextlab.transcripts import load_transcript, load_transcripts
from contextlab.transcripts.mini_swe_agent import NO_TOOL_CALLS


def _traj(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "info": {"exit_status": "Submitted", "mini_version": "1.15.0", "model_stats": {"api_calls": 1}},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "repo__repo-1",
    }


def _response(prompt: int, cached: int, created: int = 1763511117) -> dict[str, Any]:
    return {
        "response": {
            "model": "google/gemini-3-pro-preview",
            "created": created,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
        }
    }


def test_observations_stay_user_messages_and_usage_attaches(tmp_path: Path) -> None:
    doc = _traj(
        [
            {"role": "system", "content": "You are a shell agent."},
            {"role": "user", "content": "<pr_description>fix</pr_description>"},
            {
                "role": "assistant",
                "content": "THOUGHT: look\n\n```bash\nls\n```",
                "extra": _response(1379, 0),
            },
            {"role": "user", "content": "<returncode>0</returncode>\n<output>a.py</output>"},
            {
                "role": "assistant",
                "content": "```bash\ncat a.py\n```",
                "extra": _response(1500, 1024, 1763511130),
            },
        ]
    )
    path = tmp_path / "repo__repo-1.traj.json"
    path.write_text(json.dumps(doc))
    t = load_transcript(path)
    assert t.system_prompt == "You are a shell agent."
    assert [m["role"] for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert not any("tool_calls" in m or "extra" in m for m in t.messages)
    assert t.metadata["tool_calls"] == NO_TOOL_CALLS
    assert (t.usage[3].prompt_tokens, t.usage[3].cache_read_tokens, t.usage[3].reasoning_tokens) == (
        1500,
        1024,
        3,
    )
    assert t.timestamps == {1: 1763511117.0, 3: 1763511130.0}
    assert t.model == "google/gemini-3-pro-preview" and t.source_format == "mini-swe-agent"
    # The task is the person's; the command output is the environment's (never a user ask).
    assert [m.get("display_kind") for m in t.messages] == [None, None, "observation", None]
    from contextlab.measure.targets import targets_for

    targets = targets_for(t).targets
    assert [x.texts[0] for x in targets if x.kind == "task"] == ["<pr_description>fix</pr_description>"]
    assert [x.key for x in targets if x.kind == "artifact"] == ["read:a.py"]  # from the fenced bash block


def test_bad_message_names_its_index(tmp_path: Path) -> None:
    doc = _traj([{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}])
    path = tmp_path / "bad.traj.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TranscriptError, match=r"message 1: field 'role': unknown role 'robot'"):
        load_transcripts(path)


def test_every_real_trajectory_matches_its_source(shared_transcripts: Path) -> None:
    files = sorted((shared_transcripts / "mini-swe-agent" / "trajs").glob("*.traj.json"))
    assert len(files) == 59
    for path in files:
        raw = json.loads(path.read_text())
        t = load_transcript(path)
        source_messages = raw["messages"]
        assert len(t.messages) == len(source_messages) - 1  # the system prompt is kept apart
        assert t.n_requests == sum(1 for m in source_messages if m["role"] == "assistant")
        assert validate_messages(t.messages) == []
        usages = [m["extra"]["response"]["usage"] for m in source_messages if m["role"] == "assistant"]
        assert sum(u.prompt_tokens for u in t.usage.values()) == sum(u["prompt_tokens"] for u in usages)
        assert sum(u.cache_read_tokens for u in t.usage.values()) == sum(
            (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0 for u in usages
        )


def test_observations_are_tool_output_for_the_measurements(tmp_path: Path) -> None:
    from contextlab.measure.targets import targets_for

    output = (
        "<returncode>1</returncode>\n<output>Traceback (most recent call last):\n"
        "ValueError: bad ref 9f8e7d6c5b</output>"
    )
    doc = _traj(
        [
            {"role": "user", "content": "<pr_description>fix the header bug</pr_description>"},
            {"role": "assistant", "content": "```bash\npython repro.py\n```", "extra": _response(100, 0)},
            {"role": "user", "content": output},
            {"role": "assistant", "content": "Ref 9f8e7d6c5b is rejected.\n\n```bash\nsed -i 's/a/b/' h/x.py\n```"},
        ]
    )
    path = tmp_path / "repo__repo-1.traj.json"
    path.write_text(json.dumps(doc))
    targets = targets_for(load_transcript(path)).targets
    recall = [x for x in targets if x.kind == "fact" and x.category == "recall"]
    # The identifier came from the command output and the agent quoted it: a recall fact whose
    # re-fetch redoes the command that observation answers.
    assert [(x.texts, x.origin, x.source_call, x.uses) for x in recall] == [
        (("9f8e7d6c5b",), "tool", "observation@2", (3,))
    ]
    errors = [x for x in targets if x.kind == "error"]
    assert errors and all(x.origin == "tool" and x.source_call == "observation@2" for x in errors)
    assert [x.key for x in targets if x.kind == "artifact"] == ["edit:h/x.py"]
