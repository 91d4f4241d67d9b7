"""Summary role choice, merging, markers and sanitation (host-contract.md §2d step 7)."""

from __future__ import annotations

from builders import call

from contextlab.engines.compressor import assembly as asm


def m(role: str, text: str = "x") -> dict[str, object]:
    return {"role": role, "content": text}


def test_forced_user_at_start_or_after_system_or_without_users() -> None:
    assert asm.choose_placement([], [m("assistant")], 0) == asm.SummaryPlacement("user", False, True)
    assert asm.choose_placement([m("system")], [m("assistant")], 1).forced_user
    no_users = asm.choose_placement([m("assistant")], [m("assistant")], 1)
    assert no_users.forced_user and no_users.role == "user"


def test_role_follows_the_head() -> None:
    after_assistant = asm.choose_placement([m("user"), m("assistant")], [m("assistant")], 2)
    assert after_assistant == asm.SummaryPlacement("user", False, False)
    tool_head = [m("user"), {"role": "tool", "tool_call_id": "c", "content": "r"}]
    assert asm.choose_placement(tool_head, [m("assistant")], 2) == asm.SummaryPlacement("user", False, False)
    user_head = [m("user")]
    assert asm.choose_placement(user_head, [m("user")], 1) == asm.SummaryPlacement("assistant", False, False)


def test_flip_on_tail_collision() -> None:
    # Head ends with assistant → user; tail starts with user → flip to assistant (no head collision? it
    # collides with the head's assistant) → merge into the first tail message.
    placement = asm.choose_placement([m("user"), m("assistant")], [m("user"), m("assistant")], 2)
    assert placement == asm.SummaryPlacement("user", True, False)
    # Head ends with user → assistant; tail starts with assistant → flip to user; collides with head → merge.
    placement = asm.choose_placement([m("user")], [m("assistant"), m("user")], 1)
    assert placement == asm.SummaryPlacement("assistant", True, False)
    # Head ends with tool → user; tail starts with user → flip to assistant (head is tool): no merge.
    tool_head = [m("user"), {"role": "tool", "tool_call_id": "c", "content": "r"}]
    assert asm.choose_placement(tool_head, [m("user")], 2) == asm.SummaryPlacement("assistant", False, False)


def test_forced_merge_prepends_summary_and_end_marker() -> None:
    tail_user = {"role": "user", "content": "latest ask", "message_uid": "u1", "api_content": "stale"}
    merged = asm.merge_into(tail_user, "BODY", forced_user=True)
    assert merged["content"] == f"{asm.SUMMARY_PREFIX}\nBODY{asm.END_MARKER}\n\nlatest ask"
    assert merged["message_uid"] == "u1" and "api_content" not in merged
    back = asm.unwrap_handoff(merged)
    assert back == asm.Unwrapped("BODY", "latest ask")
    assert asm.is_actionable_user(merged)


def test_prior_context_merge() -> None:
    merged = asm.merge_into({"role": "assistant", "content": "old reply"}, "BODY", forced_user=False)
    assert merged["content"] == (
        f"{asm.PRIOR_OPEN}\nold reply\n{asm.PRIOR_CLOSE}\n{asm.SUMMARY_PREFIX}\nBODY{asm.END_MARKER}"
    )
    assert asm.unwrap_handoff(merged) == asm.Unwrapped("BODY", "old reply")


def test_standalone_summary_message_and_recognition() -> None:
    msg = asm.summary_message("BODY", "user", True)
    assert msg["content"] == f"{asm.SUMMARY_PREFIX}\nBODY{asm.END_MARKER}"
    assert msg["_compressed_summary"] is True and msg["_compressed_summary_has_user_turn"] is True
    assert asm.is_handoff(msg) and not asm.is_actionable_user(msg)
    assert asm.unwrap_handoff(msg) == asm.Unwrapped("BODY", None)
    legacy = {"role": "user", "content": "[CONTEXT SUMMARY]: old body"}
    assert asm.is_handoff(legacy) and asm.unwrap_handoff(legacy).summary == "old body"


def test_system_note_appended_once() -> None:
    head = asm.annotate_system([m("system", "You are helpful.")])
    assert head[0]["content"] == f"You are helpful.\n\n{asm.SYSTEM_NOTE}"
    assert asm.annotate_system(head)[0]["content"] == head[0]["content"]


def test_sanitize_strips_orphans_without_stubs() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call("gone", "f"), call("kept", "f")]},
        {"role": "tool", "tool_call_id": "kept", "content": "r"},
        {"role": "tool", "tool_call_id": "orphan", "content": "r"},
        {"role": "assistant", "content": "", "tool_calls": [call("gone2", "f")]},
    ]
    out = asm.sanitize_tool_pairs(messages)
    assert [c["id"] for c in out[0]["tool_calls"]] == ["kept"]
    assert len(out) == 3 and out[2] == {"role": "assistant", "content": asm.TOOL_CALL_REMOVED}


def test_old_images_stripped_and_db_flag_removed() -> None:
    img = {"type": "image_url", "image_url": {"url": "data:"}}
    messages = [
        {"role": "user", "content": [img], "_db_persisted": True},
        {"role": "user", "content": [{"type": "text", "text": "new"}, img]},
    ]
    out = asm.strip_persisted_flags(asm.strip_old_images(messages))
    assert out[0] == {"role": "user", "content": [{"type": "text", "text": asm.IMAGE_STRIPPED}]}
    assert out[1] == messages[1]
