"""Summary role choice, merging, markers and sanitation (host-contract.md §2d step 7)."""

from __future__ import annotations

from builders import call

from contextlab.engines.compressor import assembly as asm


def m(role: str, text: str = "x") -> dict[str, object]:
    return {"role": role, "content": text}


def place(last_head: str, first_tail: str | None, forced: bool = False) -> asm.SummaryPlacement:
    return asm.choose_placement(last_head, first_tail, forced_user=forced, has_tail=first_tail is not None)


def test_forced_user_keeps_user_and_merges_on_a_user_tail() -> None:
    """Upstream ``compress`` phase 4: a forced ``user`` summary never flips; when the first tail row is
    a user row it merges into it (and the caller prepends it there)."""
    assert place("user", "assistant", forced=True) == asm.SummaryPlacement("user", False, True)
    assert place("system", "user", forced=True) == asm.SummaryPlacement("user", True, True)


def test_role_follows_the_head() -> None:
    assert place("assistant", "assistant") == asm.SummaryPlacement("user", False, False)
    assert place("tool", "assistant") == asm.SummaryPlacement("user", False, False)
    assert place("user", "user") == asm.SummaryPlacement("assistant", False, False)


def test_alternation_reads_plain_roles_tool_rows_included() -> None:
    """0000416b compares plain roles: a head ending on a tool row makes the summary ``user``; a user
    tail then flips it to ``assistant`` (which does not collide with the tool row)."""
    assert place("tool", "user") == asm.SummaryPlacement("assistant", False, False)
    # after a user head the summary is assistant; an assistant tail collides both ways -> merge
    assert place("user", "assistant") == asm.SummaryPlacement("assistant", True, False)
    assert place("user", "user") == asm.SummaryPlacement("assistant", False, False)
    assert place("assistant", "user") == asm.SummaryPlacement("user", True, False)
    assert place("assistant", None).merge is False


def test_visible_alternation_ignores_tool_rows_and_tool_call_rows() -> None:
    """Newer upstream ``_summary_placement`` reads template-visible roles: a tool row and an assistant
    row carrying tool calls are exempt, so a head ending [user, assistant(calls), tool] ends on "user"."""
    tool_head = [m("user"), {"role": "assistant", "content": "", "tool_calls": [call("c", "f")]}, m("tool")]
    last, first, index = asm.visible_neighbours(tool_head, [m("assistant")])
    assert (last, first, index) == ("user", "assistant", 0)
    # user head -> assistant summary; the assistant tail collides, the flip collides with the head: merge
    assert place(last, first) == asm.SummaryPlacement("assistant", True, False)
    # the tail's first *visible* row decides the collision: a leading tool-call row is skipped
    tail = [{"role": "assistant", "content": "", "tool_calls": [call("d", "f")]}, m("tool"), m("user")]
    assert asm.visible_neighbours([m("user"), m("assistant")], tail) == ("assistant", "user", 2)
    assert place("assistant", "user") == asm.SummaryPlacement("user", True, False)
    # a head of exempt rows only has no visible role: user summary, never flipped
    only_calls = [{"role": "assistant", "content": "", "tool_calls": [call("e", "f")]}, m("tool")]
    assert asm.visible_neighbours(only_calls, [m("user")])[0] is None
    assert asm.choose_placement(None, "user", forced_user=False, has_tail=True) == asm.SummaryPlacement(
        "user", True, False
    )


def test_forced_merge_targets_first_visible_tail_row() -> None:
    placement = asm.choose_placement(None, "user", forced_user=True, has_tail=True, first_tail_index=1)
    assert placement.forced_user and placement.merge and placement.merge_index == 1
    unforced = asm.choose_placement("assistant", "user", forced_user=False, has_tail=True, first_tail_index=1)
    assert unforced.merge and unforced.merge_index == 0


def test_engine_places_by_visible_role_by_default_and_by_plain_role_in_0_19_0() -> None:
    """A head ending on a tool group after a user ask: plain roles say "tool" (user summary), visible
    roles say "user" (assistant summary)."""
    from builders import conversation

    from contextlab.engines.compressor import CompressorEngine

    history = conversation(40, 4_000)
    newest = CompressorEngine(protect_first_n=3)
    newest.update_model("gpt-4o", 200_000)
    start, end = newest._bounds(history)
    head, tail = history[:start], history[end:]
    visible = asm.visible_neighbours(head, tail)
    plain = (head[-1]["role"] if head else "user", tail[0]["role"] if tail else None)
    assert visible[:2] != plain  # the fixture exercises the difference
    out = newest.compress(history)
    summary_rows = [r for r in out if r.get(asm.SUMMARY_KEY)]
    expected = asm.choose_placement(visible[0], visible[1], forced_user=False, has_tail=True)
    if expected.merge:
        assert summary_rows[0].get(asm.TAIL_KEY)
    else:
        assert summary_rows[0]["role"] == expected.role and asm.TAIL_KEY not in summary_rows[0]


def test_forced_merge_prepends_summary_and_end_marker() -> None:
    tail_user = {"role": "user", "content": "latest ask", "message_uid": "u1", "api_content": "stale"}
    summary = asm.with_summary_prefix("BODY")
    merged = asm.merge_into(tail_user, summary, asm.SummaryPlacement("user", True, True), True)
    assert merged["content"] == f"{asm.SUMMARY_PREFIX}\nBODY\n\n{asm.END_MARKER}\n\nlatest ask"
    assert merged["message_uid"] == "u1" and "api_content" not in merged
    assert merged["_compressed_summary"] is True
    assert asm.unwrap_handoff(merged) == asm.Unwrapped("BODY", "latest ask")
    assert asm.strip_handoff_row(merged) == {
        "role": "user",
        "content": "latest ask",
        "message_uid": "u1",
        "_compressed_summary_has_user_turn": True,
    }


def test_prior_context_merge() -> None:
    summary = asm.with_summary_prefix("BODY")
    placement = asm.SummaryPlacement("assistant", True, False)
    merged = asm.merge_into({"role": "assistant", "content": "old reply"}, summary, placement, False)
    assert merged["content"] == (
        f"{asm.PRIOR_OPEN}\nold reply\n\n{asm.PRIOR_CLOSE}\n\n{asm.SUMMARY_PREFIX}\nBODY\n\n{asm.END_MARKER}"
    )
    assert asm.classify(merged["content"]) == "merged"
    assert asm.unwrap_handoff(merged) == asm.Unwrapped("BODY", "old reply")


def test_standalone_summary_message_and_recognition() -> None:
    msg = asm.summary_message(asm.with_summary_prefix("BODY"), "user", True)
    assert msg["content"] == f"{asm.SUMMARY_PREFIX}\nBODY\n\n{asm.END_MARKER}"
    assert msg["_compressed_summary"] is True and msg["_compressed_summary_has_user_turn"] is True
    assert asm.is_handoff(msg) and not asm.is_actionable_user(msg)
    assert asm.unwrap_handoff(msg) == asm.Unwrapped("BODY", None)
    legacy = {"role": "user", "content": "[CONTEXT SUMMARY]: old body"}
    assert asm.is_handoff(legacy) and asm.unwrap_handoff(legacy).summary == "old body"


def test_every_historical_prefix_is_recognised_and_stripped() -> None:
    from contextlab import hermes_texts as texts

    assert len(texts.HISTORICAL_PREFIXES) == 3
    for prefix in texts.HISTORICAL_PREFIXES:
        old = {"role": "user", "content": f"{prefix}\nold body\n\n{asm.END_MARKER}"}
        assert asm.is_handoff(old)
        assert asm.unwrap_handoff(old).summary == "old body"
        assert asm.with_summary_prefix(old["content"]) == f"{asm.SUMMARY_PREFIX}\nold body"


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
        {"role": "user", "content": "next"},
    ]
    out = asm.sanitize_tool_pairs(messages)
    assert [c["id"] for c in out[0]["tool_calls"]] == ["kept"]
    assert len(out) == 4 and out[2] == {"role": "assistant", "content": asm.TOOL_CALL_REMOVED}


def test_sanitize_keeps_the_trailing_in_flight_calls_with_the_newest_rules() -> None:
    """Newer upstream (#79278): the last non-tool row's calls may still be awaiting results: kept."""
    pending = {"role": "assistant", "content": "", "tool_calls": [call("p", "f")]}
    out = asm.sanitize_tool_pairs([{"role": "user", "content": "go"}, pending], keep_inflight=True)
    assert out[1] is pending
    earlier = {"role": "assistant", "content": "", "tool_calls": [call("q", "f")]}
    out = asm.sanitize_tool_pairs([{"role": "user", "content": "go"}, earlier, m("user", "next")], keep_inflight=True)
    assert out[1] == {"role": "assistant", "content": asm.TOOL_CALL_REMOVED}


def test_sanitize_strips_trailing_calls_without_results() -> None:
    """0000416b's ``_sanitize_tool_pairs`` has no in-flight exemption: calls without a result anywhere
    are stripped, the last row included."""
    pending = {"role": "assistant", "content": "", "tool_calls": [call("p", "f")]}
    out = asm.sanitize_tool_pairs([{"role": "user", "content": "go"}, pending])
    assert out[1] == {"role": "assistant", "content": asm.TOOL_CALL_REMOVED}


def test_old_images_stripped_and_db_flag_removed() -> None:
    img = {"type": "image_url", "image_url": {"url": "data:"}}
    messages = [
        {"role": "user", "content": [img], "_db_persisted": True},
        {"role": "user", "content": [{"type": "text", "text": "new"}, img]},
    ]
    out = asm.strip_persisted_flags(asm.strip_old_images(messages))
    assert out[0] == {"role": "user", "content": [{"type": "text", "text": asm.IMAGE_STRIPPED}]}
    assert out[1] == messages[1]
