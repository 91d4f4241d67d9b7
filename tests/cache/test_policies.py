"""Placement policies: where the markers go, the four-marker limit, request-local copies."""

from __future__ import annotations

import copy
import itertools

import pytest

from contextlab.cache.blocks import BlockRenderer
from contextlab.cache.policies import (
    POLICIES,
    ClaudeCodeLike,
    HermesCurrent,
    RollingAnchor,
    SystemAnd3,
    apply_policy,
    make_policy,
)
from contextlab.errors import ConfigError

from .helpers import msg

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


def history() -> list[dict[str, object]]:
    return [
        msg("system", "You are helpful. Today is 2026-11-30."),
        msg("user", "hi"),
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        msg("assistant", "done"),
        msg("user", "thanks"),
    ]


def marked(messages: list[dict[str, object]]) -> list[int]:
    found = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if "cache_control" in m or (
            isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content)
        ):
            found.append(i)
    return found


def test_system_and_3_marks_system_and_last_three_eligible_messages() -> None:
    original = history()
    snapshot = copy.deepcopy(original)
    out, _, markers = apply_policy(SystemAnd3(), original)
    assert original == snapshot  # request-local copies only
    assert len(markers) == 4
    assert marked(out) == [0, 3, 4, 5]  # the empty tool-call assistant row is skipped
    assert out[5]["content"] == [{"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}}]
    assert out[3]["cache_control"] == {"type": "ephemeral"}  # tool rows: top-level marker
    without_tools, _, _ = apply_policy(SystemAnd3(tool_part_markers=False), history())
    assert marked(without_tools) == [0, 1, 4, 5]


def test_existing_markers_are_stripped_first() -> None:
    messages = history()
    messages[1] = {
        "role": "user",
        "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
    }
    out, _, markers = apply_policy(make_policy("system_only"), messages)
    assert marked(out) == [0] and len(markers) == 1


def test_hermes_current_splits_static_system_prefix() -> None:
    policy = HermesCurrent(static_prefix="You are helpful.", ttl="1h")
    out, _, markers = apply_policy(policy, history())
    assert len(markers) == 4
    system = out[0]["content"]
    assert [p["text"] for p in system] == ["You are helpful.", " Today is 2026-11-30."]
    assert all(p["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for p in system)
    assert marked(out) == [0, 4, 5]
    fallback, _, _ = apply_policy(HermesCurrent(static_prefix="Something else"), history())
    assert marked(fallback) == [0, 3, 4, 5]


def test_hermes_tool_plan_marks_last_tool_and_completed_transactions() -> None:
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("a", "b")]
    policy = HermesCurrent(static_prefix="You are helpful.", tool_plan=True)
    out, out_tools, markers = apply_policy(policy, history(), tools)
    assert "cache_control" in out_tools[1] and "cache_control" not in out_tools[0]
    assert len(markers) == 4
    assert marked(out) == [0, 3, 4]  # static prefix, tool run end, finished turn (open user turn excluded)


def test_claude_code_policy_marks_system_project_context_and_last_block() -> None:
    renderer = BlockRenderer()
    messages = history()[1:]
    request = renderer.render(messages, [10] * len(messages), [], 0, overhead_tokens=20000)
    markers = ClaudeCodeLike().markers(request, messages)
    assert [request.blocks[m.block].kind for m in markers] == ["overhead", "text", "text"]
    assert [request.message_of(m.block) for m in markers] == [-2, 0, 4]
    assert all(m.ttl == "1h" for m in markers)


def test_rolling_anchor_keeps_a_write_inside_every_lookback_window() -> None:
    messages = [msg("system", "s")] + [msg("user" if i % 2 else "assistant", f"m{i}") for i in range(60)]
    request = BlockRenderer().render(messages, [10] * len(messages), [], 0)
    markers = RollingAnchor(k=18).markers(request, messages)
    assert len(markers) <= 4
    blocks = sorted(m.block for m in markers)
    assert blocks[0] == 0 and blocks[-1] == 60
    gaps = [b - a for a, b in itertools.pairwise(blocks[1:])]
    assert all(gap <= 19 for gap in gaps)
    with pytest.raises(ConfigError):
        RollingAnchor(k=25)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_policy_respects_the_four_marker_limit(name: str) -> None:
    messages = [msg("system", "s")] + [msg("user" if i % 2 else "assistant", f"m{i}") for i in range(50)]
    _, _, markers = apply_policy(make_policy(name), messages)
    assert len(markers) <= 4
    assert len({m.block for m in markers}) == len(markers)


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown cache policy"):
        make_policy("everything")
