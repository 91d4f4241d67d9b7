"""``CompressorEngine.compress`` step by step, anti-thrash, failures and deferral (host-contract.md §2)."""

from __future__ import annotations

import pytest
from builders import call, conversation

from contextlab import clock
from contextlab.engines.compressor import CompressorEngine
from contextlab.engines.compressor.assembly import END_MARKER, SUMMARY_PREFIX, is_handoff
from contextlab.engines.summarizers import FailureKind, SummaryFailure, SummaryRequest
from contextlab.messages import validate_messages


class Failing:
    """A summarizer that always fails with one host failure class (the interface, not a client mock)."""

    name = "failing"

    def __init__(self, kind: FailureKind) -> None:
        self.kind = kind
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        raise SummaryFailure(self.kind, "scripted failure")


def engine(**kwargs: object) -> CompressorEngine:
    e = CompressorEngine(**kwargs)  # type: ignore[arg-type]
    e.update_model("gpt-4o", 200_000)
    return e


def committed(e: CompressorEngine, messages: list[dict[str, object]]) -> list[dict[str, object]]:
    """One pass the host commits: ``compress``, then what upstream's ``compress_context`` records on
    the engine afterwards (the completed-boundary record, awaiting real usage)."""
    out = e.compress(messages)  # type: ignore[arg-type]
    if e._last_compression_made_progress:
        e.record_completed_compaction(used_fallback=e._last_summary_fallback_used)
        e.awaiting_real_usage_after_compression = True
    return out  # type: ignore[return-value]


def handoff_text(messages: list[dict[str, object]]) -> str:
    (text,) = [str(m["content"]) for m in messages if is_handoff(m)]
    return text


def strip_tail_key(message: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in message.items() if k != "_compaction_tail"}


def test_too_small_is_a_structural_backoff_not_a_strike() -> None:
    """Newer upstream #93022: nothing eligible is not ineffective; a 300 s backoff defers retries instead."""
    with clock.using(clock.VirtualClock(10_000.0)) as vc:
        e = engine()
        small = [*conversation(1)[:3], {"role": "user", "content": "more"}]
        assert len(small) <= 3 + 4
        assert e.compress(small) is small
        assert e.thrash.ineffective == 0 and e.compression_count == 0
        ok, reason = e.should_compress_info(10**6)
        assert not ok and reason == "structural_backoff:300"
        vc.advance(301)
        assert e.should_compress_info(10**6) == (True, None)


def test_no_compressible_window_backs_off_and_force_lifts_it() -> None:
    e = engine(protect_first_n=2)
    calls = [call(f"c{i}", "read_file", path=f"f{i}") for i in range(5)]
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}]
    history += [{"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in range(5)]
    assert e.compress(history) is history
    assert e.thrash.ineffective == 0 and e.thrash.blocked_reason() is not None
    assert str(e.thrash.blocked_reason()).startswith("structural_backoff:")
    e.compress(history, force=True)  # a manual /compress clears the backoff before running
    assert e.thrash.structural_until > 0  # ... and this no-op arms it again


def test_a_completed_compaction_lifts_the_structural_backoff() -> None:
    e = engine()
    e.compress(conversation(1))
    assert e.thrash.structural_until > 0
    e.compress(conversation(40, 4_000))
    assert e.compression_count == 1 and e.thrash.structural_until == 0


def test_too_small_is_a_strike_in_0_19_0() -> None:
    """0.19.0 (and 0000416b): ``len(messages) <= head + 4`` returns the input and records one strike."""
    e = engine(hermes_rules="0.19.0")
    small = [*conversation(1)[:3], {"role": "user", "content": "more"}]
    assert len(small) <= 3 + 4
    assert e.compress(small) is small
    assert e.thrash.ineffective == 1 and e.compression_count == 0


def test_a_growing_result_is_returned_in_0_19_0_and_left_to_the_host() -> None:
    """Head and tool rows only. 0.19.0 has no growth guard in the pass: it summarises the tool rows,
    keeps its new summary and count, and returns the longer list, which the replay host's guard
    refuses (the real 0.19.0 compressor raises on this input, and its host discards that too). The
    newest rules find the window empty and back off without a strike."""
    calls = [call(f"c{i}", "read_file", path=f"f{i}") for i in range(5)]
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}]
    history += [{"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in range(5)]
    old = engine(protect_first_n=2, hermes_rules="0.19.0")
    assert old.has_content_to_compress(history)
    out = old.compress(history)
    assert old._rough.messages(out) > old._rough.messages(history)
    assert old.compression_count == 1 and old.thrash.ineffective == 0
    assert not old.awaiting_real_usage_after_compression  # the host sets it once it commits a pass
    newest = engine(protect_first_n=2)
    assert newest.compress(history) is history
    assert newest.compression_count == 0 and newest.thrash.structural_until > 0


def test_first_compaction_keeps_head_and_is_valid() -> None:
    e = engine()
    history = conversation(40, 4_000)
    out = e.compress(history)
    assert out is not history and e.compression_count == 1
    assert out[:2] == history[:2]  # protect_first_n = 3: the head is kept, not summarised ...
    assert out[2]["content"] == "[read_file] read src/module_0.py from line 1 (4,000 chars)"  # ... but pruned
    assert validate_messages(out) == []
    handoffs = [m for m in out if is_handoff(m)]
    assert len(handoffs) == 1 and handoffs[0]["_compressed_summary"] is True
    text = str(handoffs[0]["content"])
    assert SUMMARY_PREFIX in text and text.endswith(END_MARKER)
    # Every carried tail row is tagged (newer upstream); the tail is otherwise verbatim at its end.
    assert all(m.get("_compaction_tail") for m in out[out.index(handoffs[0]) + 1 :])
    assert strip_tail_key(out[-1]) == history[-1] and strip_tail_key(out[-2]) == history[-2]
    assert sum(len(str(m)) for m in out) < 0.8 * sum(len(str(m)) for m in history)
    assert history[2]["content"].startswith("line 0")  # the caller's list is never mutated


def test_head_decays_and_summary_is_iterative() -> None:
    e = engine()
    first = e.compress(conversation(40, 4_000))
    grown = first + conversation(70, 4_000)[len(conversation(40, 4_000)) :]
    second = e.compress(grown)
    assert e.compression_count == 2
    # protect_first_n decayed to 0: compress_start == 0 forces a user-role summary.
    lead = next(m for m in second if is_handoff(m))
    assert lead["role"] == "user" and second.index(lead) <= 1
    text = handoff_text(second)
    # Items of the first summary survive the update (anchored merge); the old head is added.
    assert "read src/module_1.py" in text and "read src/module_0.py" in text
    assert text.count(SUMMARY_PREFIX) == 1
    assert validate_messages(second) == []


def test_summary_budget_and_focus_topic() -> None:
    history = conversation(60, 4_000, reply_chars=3_000)  # long replies: pruning cannot shrink them
    plain = handoff_text(engine().compress(history))
    focused = handoff_text(engine().compress(history, focus_topic="module_7"))
    for text in (plain, focused):
        # 0.20 × the middle (~45 turns × ~780 tokens) is over the 10,000-token ceiling at 200K.
        assert (len(text) + 3) // 4 <= 10_000 + 100  # (+ prefix and end marker)

    def share(text: str) -> float:
        lines = text.splitlines()
        return sum(len(line) for line in lines if "module_7" in line) / sum(len(line) for line in lines)

    # Everything about the focus survives; the rest is held to ~35% of the budget, so the focus
    # gets most of it (here the focus material is scarce, so the summary is simply shorter).
    focus_lines = {line for line in plain.splitlines() if "module_7" in line}
    assert focus_lines <= set(focused.splitlines())
    assert share(focused) > 2 * share(plain)
    assert len(focused) < 0.5 * len(plain)


def test_rehydration_unwraps_merged_handoff_and_drops_leaked_summary() -> None:
    e = engine()
    e._previous_summary = "## Goal\n- LEAKED FROM ANOTHER SESSION"
    e.compression_count = 1  # as after a compaction: head decayed
    out = e.compress(conversation(40, 4_000))
    assert "LEAKED" not in handoff_text(out)  # no handoff in the history: cross-session leakage
    merged_user = {
        "role": "user",
        "content": f"{SUMMARY_PREFIX}\n## Goal\n- EARLIER GOAL{END_MARKER}\n\nplease continue with module 3",
    }
    history = [merged_user, *conversation(40, 4_000)[1:]]
    e2 = engine()
    out2 = e2.compress(history)
    text = handoff_text(out2)
    assert "EARLIER GOAL" in text  # rehydrated from the merged handoff
    assert "please continue with module 3" in text  # its genuine content was summarised as a user turn
    assert text.count(SUMMARY_PREFIX) == 1


def test_orphaned_tool_calls_stripped_in_many_shapes() -> None:
    for turns in range(3, 30, 3):
        for size in (50, 2_000, 30_000):
            history = conversation(turns, size)
            history.insert(4 * (turns // 2), {"role": "user", "content": "interjection"})
            assert validate_messages(history) == []
            out = engine().compress(history)
            assert validate_messages(out) == [], (turns, size)


def test_anti_thrash_strikes_from_real_usage() -> None:
    e = engine()
    committed(e, conversation(40, 4_000))
    e.update_from_response({"prompt_tokens": 160_000, "completion_tokens": 10})  # still over: strike 1
    assert e.thrash.ineffective == 1 and e.should_compress(160_000)
    committed(e, conversation(40, 4_000))
    e.update_from_response({"prompt_tokens": 155_000, "completion_tokens": 10})  # strike 2: blocked
    assert e.should_compress_info(155_000) == (False, "ineffective")
    assert e.should_compress_info(100) == (False, None)
    e.update_from_response({"prompt_tokens": 90_000, "completion_tokens": 10})  # a reading below resets
    assert e.should_compress_info(155_000) == (True, None)


def boundary(e: CompressorEngine, messages: list[dict[str, object]], *, store: bool) -> None:
    """The session hooks of a committed compaction under a host with or without a session store
    (``commit_memory_session`` -> ``on_session_end``, then the boundary's ``on_session_start``)."""
    if store:
        e.on_session_end("s", messages)
    e.on_session_start("s", boundary_reason="compression", old_session_id="s", platform="cli")


def committed_at_boundary(e: CompressorEngine, messages: list[dict[str, object]], *, store: bool) -> None:
    """A committed pass in upstream's order: ``compress``, the flags read, the boundary's hooks, then
    the completed-boundary record and the wait for real usage."""
    e.compress(messages)  # type: ignore[arg-type]
    progressed, fallback = e._last_compression_made_progress, e._last_summary_fallback_used
    boundary(e, messages, store=store)
    if progressed:
        e.record_completed_compaction(used_fallback=fallback)
    e.awaiting_real_usage_after_compression = True


@pytest.mark.parametrize(("rules", "kept_strikes"), [("newest", 1), ("0.19.0", 0)])
def test_a_session_store_carries_the_streak_and_cooldown_over_a_boundary(rules: str, kept_strikes: int) -> None:
    e = engine(hermes_rules=rules)
    history = conversation(40, 4_000)
    committed(e, history)
    e.update_from_response({"prompt_tokens": 160_000, "completion_tokens": 10})  # strike 1
    e.thrash.fallback_streak, e.thrash.cooldown_until, e.thrash.timeout_failures = 1, clock.now() + 60, 2
    e.on_session_end("s", history)
    # The session's state is cleared, as upstream's on_session_end clears it ...
    assert (e.thrash.ineffective, e.thrash.fallback_streak, e.thrash.cooldown_until) == (0, 0, 0.0)
    assert e._previous_summary is None and e.last_real_prompt_tokens == 0
    e.on_session_start("s", boundary_reason="compression", old_session_id="s", platform="cli")
    # ... and the boundary reads back what the store kept: the streak and the cooldown, and under the
    # newest rules the strikes (0.19.0 leaves them at zero, so its anti-thrash restarts each commit).
    assert e.thrash.fallback_streak == 1 and e.thrash.cooldown_remaining() > 0
    assert e.thrash.ineffective == kept_strikes and e.thrash.timeout_failures == 0


def test_a_boundary_without_a_store_keeps_the_strikes_and_clears_the_cooldown() -> None:
    e = engine(hermes_rules="0.19.0")
    history = conversation(40, 4_000)
    committed(e, history)
    e.update_from_response({"prompt_tokens": 160_000, "completion_tokens": 10})
    e.thrash.cooldown_until, e.thrash.timeout_failures = clock.now() + 60, 2
    boundary(e, history, store=False)  # bind_session_state alone: the cooldown and the ladder go
    assert e.thrash.ineffective == 1 and e.thrash.cooldown_until == 0.0 and e.thrash.timeout_failures == 0


def test_under_a_session_store_0_19_0_keeps_compacting_where_a_bare_host_stops() -> None:
    def strikes_after_two_ineffective_commits(store: bool) -> str | None:
        e = engine(hermes_rules="0.19.0")
        for _ in range(2):
            committed_at_boundary(e, conversation(40, 4_000), store=store)
            e.update_from_response({"prompt_tokens": 160_000, "completion_tokens": 10})
        return e.should_compress_info(160_000)[1]

    assert strikes_after_two_ineffective_commits(store=False) == "ineffective"
    assert strikes_after_two_ineffective_commits(store=True) is None


def test_noop_passes_do_not_strike() -> None:
    e = engine()
    small = conversation(1)
    e.compress(small)
    e.compress(small)
    assert e.thrash.ineffective == 0
    assert e.should_compress_info(10**6)[1] == "structural_backoff:300"


def test_two_noop_passes_block_automatic_compaction_in_0_19_0() -> None:
    e = engine(hermes_rules="0.19.0")
    small = conversation(1)
    e.compress(small)
    e.compress(small)
    assert e.thrash.ineffective == 2
    assert e.should_compress_info(10**6) == (False, "ineffective")


def test_compaction_that_clears_threshold_resets() -> None:
    e = engine()
    e.thrash.strike()
    e.compress(conversation(40, 4_000))
    e.update_from_response({"prompt_tokens": 50_000, "completion_tokens": 10})
    assert e.thrash.ineffective == 0
    assert e.last_prompt_tokens == 50_000 and not e.awaiting_real_usage_after_compression


def test_update_from_response_empty_usage() -> None:
    e = engine()
    e.update_from_response({})
    assert e.last_prompt_tokens == 0 and e.should_compress() is False


def test_threshold_is_inclusive() -> None:
    e = engine()
    assert e.should_compress(150_000) and not e.should_compress(149_999)


@pytest.mark.parametrize("kind", [FailureKind.AUTH, FailureKind.QUOTA, FailureKind.NETWORK])
def test_abort_classes_return_input_unchanged(kind: FailureKind) -> None:
    """The compressor hands back its pruned copy on an abort, but upstream's compaction wrapper sees
    ``_last_compress_aborted`` and keeps the original list: the port returns the input itself."""
    e = engine(summarizer=Failing(kind))
    history = conversation(40, 4_000)
    assert e.compress(history) is history
    assert e.compression_count == 0 and e._last_compress_aborted


def test_abort_on_summary_failure_setting_and_previous_summary_rollback() -> None:
    e = engine(summarizer=Failing(FailureKind.OTHER), abort_on_summary_failure=True)
    e._previous_summary = None
    history = conversation(40, 4_000)
    assert e.compress(history) is history
    assert e._previous_summary is None and e._last_compress_aborted


def test_fallback_summary_and_streak_block() -> None:
    with clock.using(clock.VirtualClock(10_000.0)) as vc:
        e = engine(summarizer=Failing(FailureKind.OTHER))
        out = e.compress(conversation(40, 4_000))
        assert e._last_summary_fallback_used and e.thrash.fallback_streak == 0  # counted once committed
        e.record_completed_compaction(used_fallback=True)  # what the host does with it
        text = handoff_text(out)
        assert "## Completed Actions" in text and len(text) <= 8_000 + 600
        assert e._last_fallback_used and e.thrash.fallback_streak == 1
        assert e.should_compress_info(10**6) == (False, "cooldown:60")
        vc.advance(60)
        assert e.should_compress(10**6)
        committed(e, conversation(40, 4_000))
        vc.advance(60)
        assert e.should_compress_info(10**6) == (False, "ineffective")  # two fallbacks in a row


def test_force_clears_cooldown() -> None:
    with clock.using(clock.VirtualClock(10_000.0)):
        failing = Failing(FailureKind.TIMEOUT)
        e = engine(summarizer=failing)
        e.compress(conversation(40, 4_000))
        assert e.should_compress_info(10**6)[1] == "cooldown:60"
        e.summarizer = engine().summarizer  # a working summarizer again
        e.compress(conversation(40, 4_000), force=True)
        assert e.should_compress_info(10**6) == (True, None)


def test_auto_focus_is_passed_when_no_focus_topic() -> None:
    failing = Failing(FailureKind.OTHER)
    e = engine(summarizer=failing)
    e.compress(conversation(40, 4_000))
    request = failing.requests[-1]
    assert request.focus_topic is None and request.auto_focus is not None
    assert request.auto_focus.startswith("Recent user focus:")
    assert request.auto_focus.count("\n- ") == 3 and len(request.auto_focus) <= 700 + 40
    e.compress(conversation(40, 4_000), focus_topic="module_3")
    assert failing.requests[-1].focus_topic == "module_3" and failing.requests[-1].auto_focus is None


def test_preflight_deferral() -> None:
    """Upstream's deferral (``0000416b`` = 0.19.0): one defer while awaiting usage after a commit,
    then a baseline the first fitting reading takes from the compacted request's rough size, ratcheted
    by each deferred estimate and broken by a reading over the threshold."""
    e = engine()
    assert e.threshold_tokens == 150_000
    assert not e.should_defer_preflight_to_real_usage(100_000)  # below threshold
    assert not e.should_defer_preflight_to_real_usage(160_000)  # no real usage yet
    e.compress(conversation(40, 4_000))
    assert not e.should_defer_preflight_to_real_usage(160_000)  # a pass alone is not a commit
    # What the host sets once it commits the pass: the compacted request's rough size, awaiting usage.
    e.last_compression_rough_tokens, e.awaiting_real_usage_after_compression = 152_000, True
    assert e.should_defer_preflight_to_real_usage(170_000)  # awaiting usage after a compaction: one defer
    e.update_from_response({"prompt_tokens": 60_000, "completion_tokens": 10})
    assert e.last_rough_tokens_when_real_prompt_fit == 152_000  # the compacted request proved to fit
    assert not e.should_defer_preflight_to_real_usage(170_000)  # grew by 18,000 > max(4096, 7,500)
    assert e.should_defer_preflight_to_real_usage(158_000)  # within 7,500 of the fit baseline
    assert e.last_rough_tokens_when_real_prompt_fit == 158_000  # ratcheted to the deferred estimate
    assert e.should_defer_preflight_to_real_usage(165_000)  # within 7,500 of the ratcheted baseline
    e.update_from_response({"prompt_tokens": 140_000, "completion_tokens": 10})
    assert e.last_rough_tokens_when_real_prompt_fit == 165_000  # a fitting reading not after a commit keeps it
    e.update_from_response({"prompt_tokens": 151_000, "completion_tokens": 10})
    assert e.last_rough_tokens_when_real_prompt_fit == 0  # a reading over the line breaks the ratchet
    assert not e.should_defer_preflight_to_real_usage(152_000)  # real usage already over threshold
    e.update_from_response({"prompt_tokens": 100_000, "completion_tokens": 10})
    # Fits again: the baseline falls back to the last compaction's rough size.
    assert e.should_defer_preflight_to_real_usage(156_000) and not e.should_defer_preflight_to_real_usage(175_000)
    e.on_session_reset()
    assert (e.last_compression_rough_tokens, e.last_rough_tokens_when_real_prompt_fit) == (0, 0)


def test_has_content_to_compress() -> None:
    e = engine()
    assert e.has_content_to_compress(conversation(40, 4_000))
    calls = [call(f"c{i}", "read_file", path=f"f{i}") for i in range(5)]
    only_tools = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
    ]
    only_tools += [{"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in range(5)]
    # Upstream's cut is always at least one row past the (aligned) head, so even a head-only history
    # "has content"; ``compress`` then finds an empty window and strikes.
    assert engine(protect_first_n=1).has_content_to_compress(only_tools[:2])


def test_session_reset_clears_summary_and_counters() -> None:
    e = engine()
    e.compress(conversation(40, 4_000))
    e.on_session_reset()
    assert e.compression_count == 0 and e._previous_summary is None and e.last_prompt_tokens == 0
    assert e.thrash.ineffective == 0


def test_registered_as_builtin() -> None:
    from contextlab.engines import resolve_engine

    instance = resolve_engine("compressor", {"tail_mode": "legacy"})
    assert instance.name == "compressor" and isinstance(instance, CompressorEngine)
