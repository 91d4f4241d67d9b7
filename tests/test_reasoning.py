"""The host's reasoning route and the reasoning fields of a request copy (``contextlab.reasoning``)."""

from __future__ import annotations

import pytest

from contextlab.messages import sanitize_request, wire_message
from contextlab.reasoning import (
    REASONING_PAD,
    echo_family,
    host_matches,
    is_thinking_only,
    needs_reasoning_echo,
    stale_thinking_reaches_wire,
)
from contextlab.tokens import ExactCounter, estimate_message_tokens_rough


@pytest.mark.parametrize(
    ("provider", "model", "base_url", "family"),
    [
        ("", "gpt-4o", "", None),
        ("openrouter", "anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1", None),
        ("deepseek", "", "", "deepseek"),
        ("DeepSeek", "", "", "deepseek"),  # the DeepSeek and MiMo providers compare lowercased
        ("openrouter", "deepseek/DeepSeek-V4-Pro", "https://openrouter.ai/api/v1", "deepseek"),  # by model
        ("custom", "v4", "https://api.deepseek.com/v1", "deepseek"),
        ("kimi-coding", "", "", "kimi"),
        ("kimi-coding-cn", "", "", "kimi"),
        ("KIMI-CODING", "", "", None),  # Kimi's providers compare as given
        ("openrouter", "moonshotai/kimi-k2", "https://openrouter.ai/api/v1", None),  # never by model
        ("custom", "k2", "https://api.moonshot.ai/v1", "kimi"),
        ("custom", "k2", "moonshot.cn", "kimi"),  # a bare host
        ("custom", "k2", "https://api.kimi.com/coding", "kimi"),
        ("custom", "k2", "https://evil.example/moonshot.ai/v1", None),  # a path is not a host
        ("custom", "k2", "https://moonshot.ai.evil.example/v1", None),
        ("xiaomi", "", "", "mimo"),
        ("openrouter", "xiaomi/MiMo-V2-Flash", "", "mimo"),
        ("custom", "m", "https://platform.xiaomimimo.com/v1", "mimo"),
        ("kimi-coding", "deepseek-chat", "", "kimi"),  # the first family in the host's order names it
    ],
)
def test_the_echo_route_is_the_hosts(provider: str, model: str, base_url: str, family: str | None) -> None:
    assert echo_family(provider, model, base_url) == family
    assert needs_reasoning_echo(provider, model, base_url) is (family is not None)


def test_host_matching_is_by_host_or_subdomain_only() -> None:
    assert host_matches("https://API.DeepSeek.com./v1", "api.deepseek.com")
    assert host_matches("http://a.b.moonshot.ai:8443/x", "moonshot.ai")
    assert not host_matches("https://notmoonshot.ai", "moonshot.ai")
    assert not host_matches("", "moonshot.ai")
    assert not host_matches("https://[::1", "moonshot.ai")  # an unparseable URL has no host
    assert not host_matches("https://moonshot.ai", "")


def test_stale_thinking_reaches_the_wire_on_an_echo_route_outside_the_responses_api() -> None:
    assert stale_thinking_reaches_wire("deepseek")
    assert not stale_thinking_reaches_wire("deepseek", api_mode="codex_responses")
    assert not stale_thinking_reaches_wire("openrouter", "anthropic/claude-sonnet-4")


ROWS = {
    "text": {"role": "assistant", "content": "done", "reasoning_content": "I should check.", "finish_reason": "stop"},
    "empty string": {"role": "assistant", "content": "done", "reasoning_content": ""},
    "none": {"role": "assistant", "content": "done", "reasoning_content": None},
    "reasoning only": {"role": "assistant", "content": "done", "reasoning": "Let me think."},
    "foreign on a call turn": {
        "role": "assistant",
        "content": "",
        "reasoning": "Another provider's thought.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    },
    "nothing": {"role": "assistant", "content": "done"},
}

ECHOED = {
    "text": "I should check.",
    "empty string": REASONING_PAD,  # DeepSeek rejects "": the pad
    "none": REASONING_PAD,
    "reasoning only": "Let me think.",  # promoted
    "foreign on a call turn": REASONING_PAD,  # never leaked to another provider
    "nothing": REASONING_PAD,
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_an_assistant_rows_reasoning_on_each_kind_of_route(name: str) -> None:
    row = ROWS[name]
    strict = wire_message(row)
    assert "reasoning_content" not in strict  # not even an empty string or a pad
    echo = wire_message(row, echo_reasoning=True)
    assert echo["reasoning_content"] == ECHOED[name]
    for wire in (strict, echo):
        assert "reasoning" not in wire and "finish_reason" not in wire  # trajectory-only, every route
    assert row == ROWS[name]  # the history row is untouched


def test_other_rows_lose_the_trajectory_keys_and_keep_reasoning_details() -> None:
    details = [{"type": "reasoning.text", "text": "t", "signature": "sig"}]
    user = wire_message({"role": "user", "content": "hi", "reasoning": "x", "finish_reason": "stop"})
    assert user == {"role": "user", "content": "hi"}
    assistant = wire_message({"role": "assistant", "content": "a", "reasoning_details": details})
    assert assistant["reasoning_details"] == details  # OpenRouter's continuity: sent on every route


def test_the_exact_count_includes_echoed_reasoning_and_the_rough_estimate_follows_the_wire() -> None:
    counter = ExactCounter()
    row = {"role": "assistant", "content": "done", "reasoning_content": "word " * 200}
    strict, echo = wire_message(row), wire_message(row, echo_reasoning=True)
    assert counter.message(strict) == counter.message({"role": "assistant", "content": "done"})
    assert counter.message(echo) == counter.message(strict) + counter.text("word " * 200)
    assert estimate_message_tokens_rough(echo) - estimate_message_tokens_rough(strict) >= 1_000 // 4


def test_thinking_only_is_judged_on_the_request_copy() -> None:
    thinking = {"role": "assistant", "content": "", "reasoning_content": "Only thoughts."}
    user = {"role": "user", "content": "go on"}
    history = [{"role": "user", "content": "hi"}, thinking, user]
    # Strict route: the reasoning is gone from the copy, so the row is an empty turn the host sends.
    strict = sanitize_request([wire_message(m) for m in history])
    assert [m["role"] for m in strict] == ["user", "assistant", "user"]
    # Echo route: the copy still carries its thought, so it is dropped and the users merge.
    echo = sanitize_request([wire_message(m, echo_reasoning=True) for m in history])
    assert [m["role"] for m in echo] == ["user"]
    # A pad is not a thought; reasoning_details rides every route and is one.
    assert not is_thinking_only({"role": "assistant", "content": "", "reasoning_content": REASONING_PAD})
    assert is_thinking_only({"role": "assistant", "content": "", "reasoning_details": [{"type": "x"}]})
    assert is_thinking_only({"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}], "reasoning": "t"})
    assert not is_thinking_only({"role": "assistant", "content": [{"type": "image_url"}], "reasoning": "t"})
    codex = {"role": "assistant", "content": "", "codex_reasoning_items": [{"type": "reasoning"}]}
    assert is_thinking_only(codex)
    assert not is_thinking_only({**codex, "codex_reasoning_items": [{"type": "message"}]})
