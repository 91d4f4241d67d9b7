"""The real user turn a committed compaction must keep (``contextlab.host.user_turn``)."""

from __future__ import annotations

from typing import Any

from contextlab import hermes_texts
from contextlab.host.user_turn import ensure_user_turn, insert_anchor, is_real_user_message

ASK = {"role": "user", "content": "Fix the login bug in auth.py", "message_uid": "u1", "_db_persisted": True}
SUMMARY = hermes_texts.SUMMARY_PREFIX + " the work so far\n\n" + hermes_texts.END_MARKER


def user(content: Any, **keys: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **keys}


def test_runtime_scaffolding_and_summaries_are_not_the_users_turn() -> None:
    assert is_real_user_message(ASK)
    assert is_real_user_message(user([{"type": "text", "text": "look at this"}, {"type": "image_url"}]))
    assert not is_real_user_message(user("   "))
    assert not is_real_user_message(user([{"type": "image_url", "image_url": {"url": "x"}}]))  # no text
    assert not is_real_user_message({"role": "assistant", "content": "done"})
    assert not is_real_user_message(user("a todo list", _todo_snapshot_synthetic=True))
    assert not is_real_user_message(user("[System: Your previous tool call was cut off; retry]"))
    assert not is_real_user_message(user("[IMPORTANT: Background process 12 finished]"))
    assert not is_real_user_message(user(hermes_texts.CONTINUATION_USER[1]))
    assert not is_real_user_message(user(hermes_texts.MAX_ITERATIONS_REQUEST))
    assert not is_real_user_message(user(SUMMARY))  # a summary by its content, no metadata needed
    merged = f"{hermes_texts.PRIOR_HEADER}\nFix it\n\n{hermes_texts.PRIOR_DELIMITER}\n\n{SUMMARY}"
    assert not is_real_user_message(user(merged))  # a summary merged into the user's own words
    assert not is_real_user_message(user("Fix it", _compressed_summary=True))


def test_a_surviving_ask_or_a_restated_one_needs_nothing() -> None:
    kept = [{"role": "assistant", "content": "summary"}, ASK]
    assert ensure_user_turn(kept, [ASK]) is kept
    restated = [user(SUMMARY, _compressed_summary=True, _inflight_replay_merged=True)]
    assert ensure_user_turn(restated, [ASK]) is restated


def test_the_newest_ask_returns_before_the_first_assistant_not_answering_a_user() -> None:
    before = [ASK, {"role": "assistant", "content": "on it"}, user("and add a test", message_uid="u2")]
    summary = user(SUMMARY, _compressed_summary=True)
    calls = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "read"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    reply = {"role": "assistant", "content": "read it"}
    out = ensure_user_turn([summary, calls, result, reply], before)
    # The summary (a user row) precedes the first assistant; the next assistant follows a tool row.
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "user", "assistant"]
    assert out[3]["content"] == "and add a test" and out[3]["message_uid"] == "u2"
    assert "_db_persisted" not in ensure_user_turn([reply], [ASK])[0]
    assert out[3] is not before[2]  # a copy: the host never shares a row between two histories


def test_without_a_slot_the_ask_is_appended_or_folded_into_trailing_scaffolding() -> None:
    summary = user(SUMMARY, _compressed_summary=True)
    # Every assistant answers a user row and the list ends on a summary: appended after it.
    assert [m["content"] for m in ensure_user_turn([summary], [ASK])] == [SUMMARY, ASK["content"]]
    # It ends on user-role scaffolding instead: the ask's words lead the merged row, its flag dropped.
    todo = user(
        "[Your active task list was preserved across context compression]\n- [ ] x", _todo_snapshot_synthetic=True
    )
    rows = [{"role": "assistant", "content": "summary"}, todo]
    out: list[dict[str, Any]] = [user("first"), *rows]
    insert_anchor(out, dict(ASK))
    assert len(out) == 3 and out[2]["content"].startswith(ASK["content"] + "\n\n[Your active task list")
    assert "_todo_snapshot_synthetic" not in out[2] and todo.get("_todo_snapshot_synthetic")


def test_no_human_turn_anywhere_appends_the_hosts_continuation_marker() -> None:
    out = ensure_user_turn([{"role": "assistant", "content": "summary"}], [user("[System: Your previous tool call x")])
    assert out[-1] == {"role": "user", "content": hermes_texts.CONTINUATION_USER[0]}
    assert out[-1]["content"].endswith("This marker exists because no human user turn was available.")
