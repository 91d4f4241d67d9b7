"""clear_tool_uses: trigger, keep, minimum reclaim (hysteresis), stickiness, exclusions."""

from __future__ import annotations

import copy
import random
from typing import Any

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


def test_candidates_carried_over_between_calls_equal_a_fresh_scan() -> None:
    """The engine keeps its scan of the tool rows from call to call (the same rows again, or equal
    copies, plus new ones); its choices equal those of a fresh engine on every call, through growth,
    commits, copies, repeated call ids, recall tools and rows edited between calls."""
    rng = random.Random(5)
    settings = {"context_length": 4_000, "clear_at_least": 200}
    for options in ({"keep": 3}, {"protect_tokens": 1_500}, {"keep": 0}):
        kept = load("clear_tool_uses", **settings, **options)
        pool = tool_session(40, lines=12, users=3) + tool_session(20, lines=12, name="lcm_grep")
        history: list[dict[str, Any]] = []
        at = 0
        for _ in range(120):
            step = rng.random()
            if step < 0.1 and history:  # a commit: the pass's own output becomes the history
                out, _cleared = kept.prune_tool_results_only(history, 10**6)
                history = list(out)
            elif step < 0.2:  # a host that hands fresh copies every call
                history = copy.deepcopy(history)
            elif step < 0.25 and history:  # a row changed in place between calls
                rng.choice(history)["content"] = f"edited {rng.random()}"
            grow = pool[at % len(pool) : at % len(pool) + rng.randint(1, 6)]
            at += len(grow)
            history += copy.deepcopy(grow)
            fresh = load("clear_tool_uses", **settings, **options)
            assert kept._candidates(history) == fresh._candidates(history)
