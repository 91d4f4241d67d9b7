"""summary: layout, safe cuts, restated request with the absorbed-uid rule, modes, presets."""

from __future__ import annotations

import pytest
from engine_helpers import load, tool_session

from contextlab.engines.handoff import SUMMARY_END, SUMMARY_PREFIX, is_carrier, split_carrier, summary_budget
from contextlab.messages import content_text, validate_messages


def test_thresholds_of_presets() -> None:
    assert load("summary", context_length=200_000).threshold_tokens == 150_000
    assert load("summary", context_length=200_000, preset="codex").threshold_tokens == 180_000
    assert load("summary", context_length=200_000, preset="claude_code").threshold_tokens == 166_000
    # Hermes: 50%, floored at 75% below a 512K window, capped at 256K tokens.
    assert load("summary", context_length=200_000, preset="hermes").threshold_tokens == 150_000
    assert load("summary", context_length=1_000_000, preset="hermes").threshold_tokens == 256_000
    assert load("summary", context_length=600_000, preset="hermes").threshold_tokens == 256_000
    with pytest.raises(Exception, match="unknown preset"):
        load("summary", preset="nope")


def test_layout_head_carrier_tail() -> None:
    engine = load("summary", tail_messages=6)
    messages = tool_session(20, users=3)
    result = engine.compress(messages)
    assert result is not messages
    assert validate_messages(result) == []
    assert result[0] is messages[0]  # head: the first user message, untouched
    carrier = result[1]
    assert is_carrier(carrier) and carrier["role"] == "user"
    # One text part: the host does not merge it into the user row before it (docs/host-loop.md).
    assert isinstance(carrier["content"], list) and len(carrier["content"]) == 1
    text = content_text(carrier)
    assert text.startswith(SUMMARY_PREFIX) and SUMMARY_END in text
    assert len(carrier["message_uid"]) == 32
    assert result[2:] == messages[-6:]  # the verbatim tail starts at a safe cut
    assert engine.compression_count == 1
    body, _ = split_carrier(text)
    for heading in ("## User requests", "## Files and artifacts", "## Timeline", "## Current state"):
        assert heading in body
    assert "src/file_1.py" in body


def test_newest_user_request_is_restated_with_absorbed_uid() -> None:
    engine = load("summary", tail_messages=4)
    messages = tool_session(20, users=2)  # the second (newest) user message lands in the summarized span
    newest = [m for m in messages if m["role"] == "user"][-1]
    result = engine.compress(messages)
    carrier = next(m for m in result if is_carrier(m))
    assert carrier["_absorbed_message_uids"] == [newest["message_uid"]]
    assert content_text(carrier).endswith(newest["content"])
    assert not any(m.get("message_uid") == newest["message_uid"] for m in result)


def test_second_compaction_reuses_the_previous_summary() -> None:
    for mode in ("anchored", "regenerate"):
        engine = load("summary", tail_messages=4, summary_mode=mode)
        first = engine.compress(tool_session(20, users=2))
        grown = first + tool_session(12, users=1)[1:]
        second = engine.compress(grown)
        carriers = [m for m in second if is_carrier(m)]
        assert len(carriers) == 1, mode
        body, _ = split_carrier(content_text(carriers[0]))
        assert "src/file_0.py" in body, mode  # carried over from the first summary
        assert validate_messages(second) == []


def test_nothing_to_summarize_is_a_noop() -> None:
    engine = load("summary")
    short = tool_session(3)
    assert engine.compress(short) is short
    assert engine.compression_count == 0


def test_codex_keeps_user_messages_verbatim() -> None:
    engine = load("summary", preset="codex")
    messages = tool_session(20, users=4)
    result = engine.compress(messages)
    users = [m for m in messages if m["role"] == "user"]
    kept = [m for m in result if m["role"] == "user" and not is_carrier(m)]
    assert [m["message_uid"] for m in kept] == [m["message_uid"] for m in users]
    assert is_carrier(result[-1])


def test_openhands_event_count_trigger() -> None:
    engine = load("summary", preset="openhands")
    assert engine.should_compress_preflight(tool_session(60)) is True  # 121 messages > 120
    assert engine.should_compress_preflight(tool_session(50)) is False


def test_summary_budget_clamp() -> None:
    assert summary_budget(1_000) == 2_000
    assert summary_budget(30_000) == 6_000
    assert summary_budget(500_000) == 10_000


def test_host_threshold_percent_and_model_thresholds_apply() -> None:
    from contextlab import plugins

    engine = plugins.load_engine("summary")
    engine.threshold_percent = 0.6  # what the host does with a configured threshold
    engine.update_model("gpt-4o", 100_000)
    assert engine.threshold_tokens == 60_000
    engine = plugins.load_engine("mask_window")
    engine.model_thresholds = {"gpt-4o": 0.8}  # type: ignore[attr-defined]
    engine.update_model("gpt-4o-mini", 100_000)
    assert engine.threshold_tokens == 80_000


class _Verbose:
    """A stand-in LLM that answers with more text than it was given."""

    name = "verbose"

    def summarize(self, request: object) -> str:
        return "word " * 100_000


class _Failing:
    name = "failing"

    def summarize(self, request: object) -> str:
        from contextlab.engines.summarizers import FailureKind, SummaryFailure

        raise SummaryFailure(FailureKind.TIMEOUT, "no answer")


def test_acceptance_rule_falls_back_to_extractive() -> None:
    from contextlab.engines.handoff import AcceptingSummarizer

    for primary in (_Verbose(), _Failing()):
        accepting = AcceptingSummarizer(primary)
        engine = load("summary", tail_messages=4, summarizer=accepting)
        result = engine.compress(tool_session(20, users=2))
        assert any(is_carrier(m) for m in result)
        assert accepting.accepted == ["extractive"]


def test_llm_summarizer_in_replay_mode_without_cache_is_offline(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTLAB_LLM_CACHE", str(tmp_path))
    monkeypatch.setenv("CONTEXTLAB_LLM_MODEL", "")
    engine = load("summary", tail_messages=4, summarizer="llm")
    result = engine.compress(tool_session(20, users=2))  # no model configured: NO_PROVIDER -> extractive
    assert any(is_carrier(m) for m in result)
    assert engine.handoff.summarizer.accepted == ["extractive"]  # type: ignore[union-attr]
