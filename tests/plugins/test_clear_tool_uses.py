"""clear_tool_uses: trigger, keep, minimum reclaim (hysteresis), stickiness, exclusions."""

from __future__ import annotations

from engine_helpers import load, tool_session

from contextlab.engines.parts import TokenEstimator
from contextlab.messages import validate_messages


def cleared(messages: list[dict]) -> list[int]:
    rows = [m for m in messages if m.get("role") == "tool"]
    return [i for i, m in enumerate(rows) if str(m["content"]).startswith("[tool output cleared:")]


def test_below_trigger_is_a_noop() -> None:
    engine = load("clear_tool_uses", context_length=200_000)
    assert engine.trigger == 100_000  # min(100k, 0.5 x 200k)
    messages = tool_session(10)
    assert engine.prune_tool_results_only(messages, 50_000) == (messages, 0)
    assert engine.prune_tool_results_only(messages, 50_000)[0] is messages


def test_clears_oldest_until_under_trigger_minus_minimum() -> None:
    engine = load("clear_tool_uses", context_length=20_000, trigger_tokens=100_000, clear_at_least=1_000, keep=3)
    messages = tool_session(30, lines=40)
    tokens = TokenEstimator().messages(messages)
    assert tokens > engine.trigger == 10_000
    out, n = engine.prune_tool_results_only(messages, tokens)
    assert n > 0 and out is not messages
    assert cleared(out) == list(range(n))  # oldest first
    assert n <= 27  # the newest 3 are protected
    assert TokenEstimator().messages(out) <= engine.trigger - 1_000 or n == 27
    assert validate_messages(out) == []
    assert out[2]["content"].endswith("id=call_000]")
    # Sticky: cleared rows keep their bytes; a second pass only clears more, never changes old ones.
    again, n2 = engine.prune_tool_results_only(out, TokenEstimator().messages(out))
    assert (again is out and n2 == 0) or all(again[i] == out[i] for i in range(len(out)) if i in cleared(out))


def test_small_reclaim_is_not_committed() -> None:
    engine = load("clear_tool_uses", context_length=20_000, clear_at_least=50_000)
    messages = tool_session(30, lines=40)
    out, n = engine.prune_tool_results_only(messages, TokenEstimator().messages(messages))
    assert out is messages and n == 0


def test_protect_tokens_and_excluded_tools() -> None:
    engine = load("clear_tool_uses", context_length=2_000, clear_at_least=10, protect_tokens=2_000)
    messages = tool_session(20, lines=40)
    out, n = engine.prune_tool_results_only(messages, 50_000)
    rows = [m for m in out if m["role"] == "tool"]
    assert n > 0 and not str(rows[-1]["content"]).startswith("[tool")
    excluded = load("clear_tool_uses", context_length=2_000, clear_at_least=10)
    recall = tool_session(10, name="lcm_grep")
    assert excluded.prune_tool_results_only(recall, 50_000) == (recall, 0)


def test_langchain_placeholder_and_inputs() -> None:
    engine = load(
        "clear_tool_uses",
        context_length=4_000,
        clear_at_least=10,
        placeholder="langchain",
        clear_tool_inputs=True,
    )
    out, n = engine.prune_tool_results_only(tool_session(10, lines=40), 50_000)
    assert n > 0
    first_tool = next(m for m in out if m["role"] == "tool")
    assert first_tool["content"] == "[cleared]"
    call = next(m for m in out if m["role"] == "assistant")["tool_calls"][0]
    assert call["function"]["arguments"].startswith('{"cleared_chars"')
