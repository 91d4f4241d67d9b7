"""The host's rough estimator reproduced exactly, and exact offline tiktoken counts, both memoized."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextlab.tokens import (
    IMAGE_TOKENS_ROUGH,
    REPLY_PRIMING_TOKENS,
    TOKENS_PER_MESSAGE,
    ExactCounter,
    RoughCounter,
    estimate_message_tokens_rough,
    estimate_tokens_rough,
    estimate_tools_tokens_rough,
    load_encoding,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("x" * 400, 100),
        ("你好", 2),  # two CJK codepoints, nothing else
        ("你好 ab", 3),  # 2 CJK + ceil(3 bytes / 4)
        ("こんにちは", 5),  # kana
        ("한국어", 3),  # hangul
        ("café", 2),  # non-ASCII but not CJK: ceil(5 UTF-8 bytes / 4)
    ],
)
def test_rough_text_estimate(text: str, expected: int) -> None:
    assert estimate_tokens_rough(text) == expected


def test_rough_message_estimate_uses_the_repr_of_the_shadow() -> None:
    message = {"role": "user", "content": "hello", "message_uid": "x" * 32, "timestamp": 5}
    shadow = {"role": "user", "content": "hello"}
    assert estimate_message_tokens_rough(message) == (len(str(shadow)) + 3) // 4
    with_reasoning = {"role": "assistant", "content": "a", "reasoning": "r" * 400, "reasoning_content": "rc"}
    assert (
        estimate_message_tokens_rough(with_reasoning)
        == (len(str({"role": "assistant", "content": "a", "reasoning_content": "rc"})) + 3) // 4
    )


def test_rough_message_estimate_charges_images_flat() -> None:
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..." + "A" * 10_000}}]}
    shadow = {"role": "user", "content": [{"type": "image_url", "image": "[stripped]"}]}
    assert estimate_message_tokens_rough(message) == (len(str(shadow)) + 3) // 4 + IMAGE_TOKENS_ROUGH


def test_rough_tools_estimate_counts_name_description_and_compact_parameters() -> None:
    params = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": params}}]
    chars = len("read") + len("Read a file") + len(json.dumps(params, separators=(",", ":")))
    assert estimate_tools_tokens_rough(tools) == (chars + 3) // 4
    flat = [{"name": "read", "description": "Read a file", "parameters": params}]
    assert estimate_tools_tokens_rough(flat) == estimate_tools_tokens_rough(tools)


def test_rough_counter_ignores_uids_when_memoizing() -> None:
    counter = RoughCounter()
    a = {"role": "user", "content": "hi there"}
    b = {**a, "message_uid": "f" * 32}
    assert counter.message(a) == counter.message(b)
    assert len(counter._memo) == 1


@pytest.mark.parametrize(("encoding", "ids"), [("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])])
def test_exact_encodings_load_offline_with_real_ids(encoding: str, ids: list[int]) -> None:
    assert load_encoding(encoding).encode_ordinary("hello world") == ids


def test_exact_message_count_is_framing_plus_real_tokens() -> None:
    counter = ExactCounter("cl100k_base")
    message = {"role": "user", "content": "hello world"}
    assert counter.message(message) == TOKENS_PER_MESSAGE + 1 + 2  # framing, "user", "hello world"
    assert counter.request([message], []) == counter.message(message) + REPLY_PRIMING_TOKENS


def test_exact_counter_tokenizes_each_distinct_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = ExactCounter("cl100k_base")
    calls: list[str] = []
    real = counter._encoding

    class Spy:
        name = "spy"

        def encode_ordinary(self, text: str) -> list[int]:
            calls.append(text)
            return real.encode_ordinary(text)

    counter._encoding = Spy()  # type: ignore[assignment]
    history: list[dict[str, Any]] = []
    for i in range(50):
        history.append({"role": "user", "content": f"message number {i} " * 20})
        counter.request(list(history), [])
    contents = [m["content"] for m in history]
    assert sorted(c for c in calls if c != "user") == sorted(contents)


def test_exact_counter_counts_tool_calls_and_tool_ids() -> None:
    counter = ExactCounter()
    bare = {"role": "assistant", "content": None}
    with_call = {
        **bare,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
        ],
    }
    assert counter.message(with_call) > counter.message(bare)
    tool = {"role": "tool", "tool_call_id": "call_abc", "content": "ok"}
    assert counter.message(tool) > counter.message({"role": "tool", "content": "ok"})
