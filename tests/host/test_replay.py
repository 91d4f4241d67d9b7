"""The replay host follows the real host's order and fail-open rules (host-contract.md §5, §8)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from contextlab import HostSettings, replay
from contextlab.engine import USAGE_KEYS, ContextEngine
from contextlab.examples import tool_conversation
from contextlab.host.trace import TIMING_COLUMNS
from contextlab.messages import validate_messages
from contextlab.transcripts import CompactionEvent, Transcript
from tests.toy_engines import (
    BaseToy,
    FailingEngine,
    GrowingEngine,
    KeepLastEngine,
    PruningEngine,
    RecordingEngine,
    SelectingEngine,
    SlowEngine,
    ThreeArgEngine,
)


def run(engine: ContextEngine, transcript: Transcript | None = None, **settings: Any):
    return replay(transcript or tool_conversation(6), engine, HostSettings(**settings))


def deterministic(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS])


# ----------------------------------------------------------------------------- request plan


def test_one_row_per_recorded_assistant_message() -> None:
    t = tool_conversation(5)
    result = run(BaseToy(), t)
    assert len(result.trace) == t.n_requests == 10
    assert result.trace["request"].tolist() == list(range(10))
    assert result.trace["phase"].tolist()[:2] == ["turn_start", "tool_loop"]
    assert result.summary["turns"] == 5


def test_history_grows_by_the_recorded_messages_and_prefix_is_stable_without_compaction() -> None:
    result = run(BaseToy())
    trace = result.trace
    # system + user, then each request adds the previous assistant (+ tool) rows.
    assert trace["n_messages"].tolist()[:4] == [2, 4, 6, 8]
    assert (trace["prefix_messages"].iloc[1:].to_numpy() == trace["n_messages"].shift(1).iloc[1:].to_numpy()).all()
    assert result.summary["prefix_breaks"] == 0
    assert (trace["prompt_tokens"].diff().iloc[1:] > 0).all()


def test_usage_dict_has_the_eight_keys_and_prompt_equals_trace() -> None:
    engine = BaseToy()
    result = run(engine)
    engine = result.engine
    assert len(engine.usages) == len(result.trace)
    for usage, prompt in zip(engine.usages, result.trace["prompt_tokens"], strict=True):
        assert set(usage) == set(USAGE_KEYS)
        assert usage["prompt_tokens"] == prompt
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["input_tokens"] == prompt  # no cache model: nothing read or written


def test_two_replays_give_identical_traces() -> None:
    a = run(KeepLastEngine(threshold_tokens=900))
    b = run(KeepLastEngine(threshold_tokens=900))
    assert a.summary["compactions"] > 0
    pd.testing.assert_frame_equal(deterministic(a.trace), deterministic(b.trace))
    pd.testing.assert_frame_equal(deterministic(a.compactions), deterministic(b.compactions))


# ----------------------------------------------------------------------------- select_context fail-open


def test_inherited_select_context_is_never_called(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("inherited select_context must not be called")

    monkeypatch.setattr(ContextEngine, "select_context", explode)
    with caplog.at_level(logging.WARNING):
        result = run(BaseToy())
    assert not result.trace["select_context_used"].any()
    assert not caplog.records


@pytest.mark.parametrize(
    ("choice", "reason"),
    [
        (lambda req, conv, inc: [], "empty list"),
        (lambda req, conv, inc: "not a list", "not a list"),
        (lambda req, conv, inc: [*req, "junk"], "non-dict"),
        (lambda req, conv, inc: (_ for _ in ()).throw(RuntimeError("bad engine")), "exception: RuntimeError"),
    ],
)
def test_bad_selections_fall_open_to_the_original_request(
    choice: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    baseline = run(BaseToy())
    with caplog.at_level(logging.WARNING):
        result = run(SelectingEngine(choice))
    assert result.trace["select_context_rejected"].str.contains(reason).all()
    assert not result.trace["select_context_used"].any()
    assert result.trace["prompt_tokens"].tolist() == baseline.trace["prompt_tokens"].tolist()
    assert any("select_context" in r.getMessage() for r in caplog.records)


def test_none_keeps_the_request_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    baseline = run(BaseToy())
    with caplog.at_level(logging.WARNING):
        result = run(SelectingEngine(lambda req, conv, inc: None))
    assert result.trace["select_context_rejected"].isna().all()
    pd.testing.assert_series_equal(result.trace["prompt_tokens"], baseline.trace["prompt_tokens"])
    assert not caplog.records


def test_selection_replaces_only_the_request_never_the_history() -> None:
    def keep_system_and_last_two(req: list[dict[str, Any]], conv: Any, inc: Any) -> list[dict[str, Any]]:
        for m in conv:  # mutations of the clones must not leak into the host's history
            m["content"] = "MUTATED"
        if inc is not None:
            inc["content"] = "MUTATED"
        if len(req) <= 3:
            return req
        ask = next(m for m in reversed(req) if m["role"] == "user")  # a request must keep a user message
        return [req[0], *([ask] if ask not in req[-2:] else []), *req[-2:]]

    engine = SelectingEngine(keep_system_and_last_two)
    result = run(engine)
    engine = result.engine
    assert result.trace["select_context_used"].all()
    assert result.trace["n_messages"].max() == 4
    # The budget is the engine's context length, and every later request still sees the full history.
    assert engine.seen[-1]["budget"] == 200_000
    assert len(engine.seen[-1]["conversation"]) == 23
    assert all(m["content"] != "MUTATED" for m in engine.seen[-1]["request"][1:])


def test_role_oddities_are_accepted_and_normalized() -> None:
    def odd(req: list[dict[str, Any]], conv: Any, inc: Any) -> list[dict[str, Any]]:
        return [
            req[0],
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
        ]

    result = run(SelectingEngine(odd))
    assert result.trace["select_context_used"].all()
    # developer → system, and the two adjacent user rows are merged by the sanitizer.
    assert (result.trace["n_messages"] == 3).all()


@pytest.mark.parametrize(
    ("choice", "reason"),
    [
        (lambda req, conv, inc: [{"role": "system", "content": "swapped"}, *req[1:]], "system prompt was replaced"),
        (lambda req, conv, inc: [*req, {"role": "system", "content": "late"}], "system message injected"),
        (lambda req, conv, inc: [*req, {"role": "tool", "content": "x"}], "tool row without tool_call_id"),
    ],
)
def test_strict_mode_rejects_system_injection_and_id_less_tool_rows(choice: Any, reason: str) -> None:
    lenient = run(SelectingEngine(choice))
    strict = run(SelectingEngine(choice), strict_select_context=True)
    assert lenient.trace["select_context_used"].all()
    assert strict.trace["select_context_rejected"].str.contains(reason).all()


def test_strict_mode_accepts_a_selection_that_keeps_the_system_prefix() -> None:
    def system_and_ask(req: list[dict[str, Any]], conv: Any, inc: Any) -> list[dict[str, Any]]:
        return [req[0], next(m for m in reversed(req) if m["role"] == "user")]

    strict = run(SelectingEngine(system_and_ask), strict_select_context=True)
    assert strict.trace["select_context_used"].all()


# ----------------------------------------------------------------------------- lifecycle and observation


def test_lifecycle_order_and_session_kwargs() -> None:
    engine = run(RecordingEngine()).engine
    names = [c[0] for c in engine.calls]
    assert names[0] == "update_model"
    assert names[1] == "on_session_start"
    assert names[-1] == "on_session_end"
    _, (_session_id, kwargs) = engine.calls[1]
    # What the real CLI host passes (tests/hermes/test_real_init.py holds it to 0.19.0's).
    assert sorted(kwargs) == ["context_length", "conversation_id", "hermes_home", "model", "platform"]
    assert kwargs["platform"] == "cli" and kwargs["conversation_id"] is None
    assert kwargs["context_length"] == engine.context_length
    assert not Path(kwargs["hermes_home"]).exists()  # a temporary home, removed when the replay ended
    assert names.count("on_turn_complete") == 6


def test_on_turn_complete_gets_a_clone_the_usage_and_turn_kwargs() -> None:
    engine = RecordingEngine()
    result = run(engine, tool_conversation(2))
    engine = result.engine
    first = next(c[1] for c in engine.calls if c[0] == "on_turn_complete")
    assert first["api_call_count"] == 2
    assert first["turn_id"].endswith(":0")
    assert first["usage"]["prompt_tokens"] == result.trace["prompt_tokens"].iloc[1]
    assert first["interrupted"] is False and first["failed"] is False
    first["messages"][0]["content"] = "engine scribbled here"  # a clone: the host must not care
    assert all(m.get("message_uid") for m in first["messages"])


def test_failing_optional_hook_is_swallowed() -> None:
    result = run(FailingEngine("on_turn_complete"))
    assert result.status == "ok"
    assert any("on_turn_complete" in w for w in result.warnings)


def test_failing_required_method_fails_the_run_but_keeps_the_rows() -> None:
    result = run(FailingEngine("update_from_response"))
    assert result.status == "failed"
    assert "update_from_response" in (result.error or "")
    assert len(result.trace) == 3


# ----------------------------------------------------------------------------- compaction gates


def test_compaction_commits_sets_the_sentinel_and_defers_post_tool() -> None:
    engine = KeepLastEngine(threshold_tokens=900)
    result = run(engine)
    engine = result.engine
    committed = result.compactions[result.compactions["outcome"] == "committed"]
    assert len(committed) == result.summary["compactions"] > 0
    assert result.trace["compressed"].sum() >= 1
    # After a committed pass the next request is smaller than the one before it.
    idx = result.trace.index[result.trace["compressed"]][0]
    assert result.trace.loc[idx, "prompt_tokens"] < result.trace.loc[idx - 1, "prompt_tokens"]
    assert result.summary["violations"] == 0


def test_pre_api_compaction_is_refunded_no_request_lost() -> None:
    t = tool_conversation(6)
    result = run(KeepLastEngine(threshold_tokens=900), t)
    assert len(result.trace) == t.n_requests


def test_noop_compress_changes_nothing() -> None:
    engine = BaseToy(threshold_tokens=500)  # always wants to compress, always returns its input
    result = run(engine)
    assert (result.compactions["outcome"] == "noop").all()
    assert (result.compactions["reason"] == "the engine returned the history unchanged").all()  # never blank
    assert result.summary["compactions"] == 0
    assert result.summary["prefix_breaks"] == 0
    # One preflight pass per turn (a no-op ends its loop), then at most max_attempts gated passes.
    gated = result.compactions[result.compactions["trigger"] != "preflight"]
    assert gated.groupby("turn").size().max() == 3
    assert result.compactions[result.compactions["trigger"] == "preflight"].groupby("turn").size().max() == 1


def test_old_three_argument_compress_is_called_with_filtered_kwargs() -> None:
    result = run(ThreeArgEngine(threshold_tokens=900))
    assert result.summary["compactions"] > 0


def test_compress_timeout_discards_the_pass() -> None:
    engine = SlowEngine(threshold_tokens=900)
    try:
        result = run(engine, tool_conversation(3), compress_timeout_s=0.05)
    finally:
        engine.release.set()
    assert (result.compactions["outcome"] == "timeout").any()
    assert result.summary["compactions"] == 0
    assert result.summary["prefix_breaks"] == 0


def test_compress_exception_changes_nothing() -> None:
    result = run(FailingEngine("compress"))
    assert result.status == "ok"
    assert (result.compactions["outcome"] == "error").all()
    assert result.summary["prefix_breaks"] == 0


def test_anti_growth_guard_refuses_a_larger_result() -> None:
    result = run(GrowingEngine())
    assert (result.compactions["outcome"] == "grew").all()
    assert result.summary["compactions"] == 0


def test_prune_commits_only_a_new_list_with_positive_count() -> None:
    committed = run(PruningEngine("new"))
    assert committed.trace["pruned"].any()
    assert committed.summary["prunes"] > 0
    same = run(PruningEngine("same-object"))
    assert not same.trace["pruned"].any()
    zero = run(PruningEngine("zero"))
    assert not zero.trace["pruned"].any()
    baseline = run(BaseToy())
    assert same.trace["prompt_tokens"].tolist() == baseline.trace["prompt_tokens"].tolist()


def test_manual_compaction_passes_focus_and_force() -> None:
    t = tool_conversation(4)
    engine = KeepLastEngine(threshold_tokens=10**9)
    result = run(engine, t, manual_compactions={2: "database schema"})
    engine = result.engine
    passes = [c[1] for c in engine.calls if c[0] == "compress"]
    assert passes == [{"n": 8, "focus_topic": "database schema", "force": True}]
    assert result.compactions["trigger"].tolist() == ["manual"]
    assert result.compactions["focus_topic"].tolist() == ["database schema"]


def test_manual_events_in_the_transcript_are_replayed() -> None:
    t = tool_conversation(4)
    t.events.append(CompactionEvent(message_index=8, trigger="manual", focus_topic="auth"))
    engine = KeepLastEngine(threshold_tokens=10**9)
    result = run(engine, t)
    engine = result.engine
    assert result.compactions["focus_topic"].tolist() == ["auth"]


def test_a_real_user_turn_survives_compaction() -> None:
    class DropUsers(KeepLastEngine):
        def compress(
            self,
            messages: list[dict[str, Any]],
            current_tokens: int | None = None,
            focus_topic: str | None = None,
            force: bool = False,
            memory_context: str = "",
        ) -> list[dict[str, Any]]:
            self.compression_count += 1
            return [{"role": "assistant", "content": "summary only"}]

    t = tool_conversation(3)
    result = run(DropUsers(threshold_tokens=10**9), t, manual_compactions={2: None})
    # The engine kept only its summary; the host re-inserted the latest real user ask before it
    # (the first assistant row not preceded by a user row), as upstream places the anchor.
    assert result.compactions["messages_after"].tolist() == [2]
    row = result.trace[result.trace["compressed"]].iloc[0]
    assert row["n_messages"] == 4  # system, re-inserted ask, summary, this turn's user
    assert result.summary["violations"] == 0


def test_overflow_compresses_then_records_the_overflow() -> None:
    t = tool_conversation(8, tool_chars=40_000)
    none = run(BaseToy(threshold_tokens=10**9), t, context_length=64_000)
    assert none.summary["overflows"] > 0
    assert none.trace["overflow"].iloc[-1]
    rescued = run(KeepLastEngine(threshold_tokens=10**9, keep=2), t, context_length=64_000)
    assert (rescued.compactions["trigger"] == "overflow").any()
    assert rescued.summary["overflows"] == 0


def test_compression_disabled_means_no_gate_fires() -> None:
    engine = KeepLastEngine(threshold_tokens=900)
    result = run(engine, compression_enabled=False)
    engine = result.engine
    assert result.summary["compaction_attempts"] == 0


def test_threshold_percent_setting_reaches_the_engine() -> None:
    from contextlab.engines.passthrough import PassthroughEngine

    result = run(PassthroughEngine(), threshold_percent=0.5, context_length=100_000)
    assert (result.trace["threshold_tokens"] == 50_000).all()


def test_fixed_overhead_is_added_to_exact_and_rough_counts() -> None:
    plain = run(BaseToy())
    padded = run(BaseToy(), fixed_overhead_tokens=1000)
    assert (padded.trace["prompt_tokens"] - plain.trace["prompt_tokens"] == 1000).all()
    assert (padded.trace["prompt_tokens_rough"] - plain.trace["prompt_tokens_rough"] == 1000).all()


def test_every_request_is_structurally_valid_for_a_compacting_engine() -> None:
    result = run(KeepLastEngine(threshold_tokens=700, keep=3), tool_conversation(10))
    assert result.summary["compactions"] >= 2
    assert result.summary["violations"] == 0


def test_real_tau_bench_conversation(shared_transcripts: Any) -> None:
    from contextlab import load_transcripts

    transcripts = load_transcripts(shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json")
    assert len(transcripts) == 200
    longest = max(transcripts, key=lambda t: len(t.messages))
    assert not validate_messages(longest.messages)
    result = replay(longest, "passthrough", encoding="o200k_base")
    assert result.status == "ok"
    assert len(result.trace) == longest.n_requests
    assert result.summary["violations"] == 0
    assert result.summary["prefix_breaks"] == 0
    assert 0.8 < result.summary["prefix_share"] < 1
    compacting = replay(longest, KeepLastEngine(threshold_tokens=5_000, keep=6), encoding="o200k_base")
    assert compacting.summary["compactions"] >= 1
    assert compacting.summary["violations"] == 0
    assert compacting.summary["prompt_tokens_max"] < result.summary["prompt_tokens_max"]


def test_sentinel_minus_one_until_the_next_real_usage() -> None:
    class Spy(KeepLastEngine):
        def __init__(self, threshold_tokens: int) -> None:
            super().__init__(threshold_tokens)
            self.seen_before_update: list[int] = []

        def update_from_response(self, usage: dict[str, Any]) -> None:
            self.seen_before_update.append(self.last_prompt_tokens)
            super().update_from_response(usage)

    result = run(Spy(threshold_tokens=900))
    engine = result.engine
    compressed = result.trace.index[result.trace["compressed"]].tolist()
    assert compressed
    for index in compressed:
        assert engine.seen_before_update[index] == -1
    assert engine.seen_before_update[0] == 0


def test_deferral_skips_the_gates_only_while_the_estimate_is_not_anchored() -> None:
    class Deferring(KeepLastEngine):
        def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
            return True

    t = tool_conversation(4)
    t.messages[0]["content"] = "a long first ask " * 300  # over the threshold before any real usage
    eager = run(KeepLastEngine(threshold_tokens=300), t)
    deferring = run(Deferring(threshold_tokens=300), t)
    # With no real usage yet, the eager engine's preflight fires on the rough estimate ...
    assert eager.compactions.iloc[0][["request", "trigger"]].tolist() == [0, "preflight"]
    # ... while the deferring one waits until a response has anchored the estimate.
    assert deferring.compactions["request"].min() >= 1
    assert len(deferring.compactions) > 0


def test_a_transcript_ending_on_a_user_message_runs_no_pass_after_its_last_request() -> None:
    """The turn-start gate prepares a request; the recording's last user message (a final
    observation, a session cut short) opens a turn that sends none, so nothing compacts for it."""
    t = tool_conversation(6)
    t.messages.append({"role": "user", "content": "final observation\n" + "diff line\n" * 20_000})
    result = run(KeepLastEngine(threshold_tokens=900), t)
    passes = result.compactions
    assert len(passes) and passes["request"].max() < len(result.trace)
    assert result.summary["compactions"] == int((passes["outcome"] == "committed").sum())


def test_after_a_commit_the_host_sets_what_upstream_sets_on_the_engine() -> None:
    """Upstream's compress_context, after a committed compaction: no real usage yet, the compacted
    request's rough size, and (for a pass the engine says made progress) its completed-boundary
    record; an engine that cannot take an attribute gets a warning, not a crash."""

    class Recording(KeepLastEngine):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.records: list[bool] = []
            self.seen: list[tuple[Any, ...]] = []

        def compress(self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            self._last_compression_made_progress = True
            self._last_summary_fallback_used = False
            return super().compress(messages, *args, **kwargs)

        def record_completed_compaction(self, *, used_fallback: bool = False) -> None:
            self.records.append(used_fallback)

        def update_from_response(self, usage: dict[str, Any]) -> None:
            self.seen.append((getattr(self, "awaiting_real_usage_after_compression", None), self.last_prompt_tokens))
            self.awaiting_real_usage_after_compression = False
            super().update_from_response(usage)

    result = run(Recording(threshold_tokens=900))
    engine = result.engine
    committed = result.compactions[result.compactions["outcome"] == "committed"]
    assert len(committed) >= 2 and len(engine.records) == len(committed) and not any(engine.records)
    assert engine.last_compression_rough_tokens == int(committed["tokens_after"].iloc[-1])
    # The first usage report after each commit finds the engine waiting for it, its prompt count parked.
    assert sum(1 for awaiting, last in engine.seen if awaiting is True and last == -1) == len(committed)

    class Slotted(KeepLastEngine):
        @property
        def awaiting_real_usage_after_compression(self) -> bool:
            return False

    slotted = run(Slotted(threshold_tokens=900))
    assert (slotted.compactions["outcome"] == "committed").any()
    assert sum("could not set awaiting_real_usage_after_compression" in w for w in slotted.warnings) == 1
