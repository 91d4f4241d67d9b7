"""mask_window: SWE-agent's omit rule, polling, exemptions, the hard-cap fallback."""

from __future__ import annotations

from engine_helpers import load, tool_session

from contextlab.engines.parts import mask_placeholder
from contextlab.messages import validate_messages


def masked_rows(view: list[dict]) -> list[int]:
    rows = [m for m in view if m.get("role") == "tool"]
    return [i + 1 for i, m in enumerate(rows) if str(m["content"]).startswith("Old environment output")]


def test_masks_rows_2_to_L() -> None:
    engine = load("mask_window", window_m=3)
    messages = tool_session(8)
    view = engine.select_context(messages, conversation_messages=messages, budget_tokens=100_000)
    assert view is not None
    assert masked_rows(view) == [2, 3, 4, 5]  # L = 8 - 3 = 5; row 1 (the task template) is kept
    assert validate_messages(view) == []
    masked = [m for m in view if m.get("role") == "tool"][1]
    assert masked["content"] == "Old environment output: (30 lines omitted)"
    original = [m for m in messages if m.get("role") == "tool"][1]
    assert masked["message_uid"] == original["message_uid"]
    assert masked["tool_call_id"] == original["tool_call_id"]
    assert original["content"] != masked["content"]  # the input is untouched


def test_nothing_to_mask_returns_none() -> None:
    engine = load("mask_window", window_m=10)
    messages = tool_session(11)
    assert engine.select_context(messages, conversation_messages=messages) is None  # L = 1


def test_polling_rewrites_only_every_k_rows() -> None:
    engine = load("mask_window", window_m=3, polling=5)
    views = []
    for n in range(8, 13):
        messages = tool_session(n)
        views.append(masked_rows(engine.select_context(messages, conversation_messages=messages) or []))
    # floor(n/5)*5 - 3: 2 for n=8,9 -> rows 2..2; 7 for n=10..12 -> rows 2..7
    assert views == [[2], [2], [2, 3, 4, 5, 6, 7], [2, 3, 4, 5, 6, 7], [2, 3, 4, 5, 6, 7]]


def test_exempt_tools_and_first_observation() -> None:
    engine = load("mask_window", window_m=1, keep_first_observation=False, exempt_tools=["lcm_grep"])
    # The recall calls reuse provider ids call_000/call_001 (ids repeat across turns): names are
    # resolved per row from the nearest preceding call.
    messages = tool_session(4) + tool_session(2, name="lcm_grep")[1:]
    view = engine.select_context(messages, conversation_messages=messages)
    assert masked_rows(view or []) == [1, 2, 3, 4]  # lcm_grep rows 5 and 6 are exempt


def test_placeholder_is_deterministic() -> None:
    assert mask_placeholder("a\nb\nc") == "Old environment output: (3 lines omitted)"
    assert mask_placeholder("") == "Old environment output: (0 lines omitted)"


def test_hard_cap_fallback_truncates_at_safe_cuts() -> None:
    engine = load("mask_window", context_length=4_000, window_m=2)
    messages = tool_session(40, users=4)
    assert not engine.should_compress(3_000)
    assert engine.should_compress(3_800)  # 0.95 x 4,000
    result = engine.compress(messages)
    assert result is not messages and len(result) < len(messages)
    assert validate_messages(result) == []
    assert result[0] is messages[0]  # the first user message (head) is kept
    newest_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    assert any(m is messages[newest_user] for m in result)
    assert engine.compression_count == 1
