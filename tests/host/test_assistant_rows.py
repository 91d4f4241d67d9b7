"""The assistant row the host keeps of a recorded reply (``contextlab.host.assistant_rows``).

Compared with the real 0.19.0 steps on random contents in ``tests/hermes``; these pin the rules and
what a replay does with them.
"""

from __future__ import annotations

from contextlab import replay
from contextlab.host.assistant_rows import (
    flattened,
    host_content,
    host_tool_call,
    made_assistant,
    without_inline_blocks,
)
from contextlab.transcripts.model import Transcript
from tests.request_log import Requests


def test_content_is_one_string() -> None:
    assert flattened(None) == ""
    parts = [
        {"type": "text", "text": "\n\n"},
        {"type": "image_url", "image_url": {"url": "u"}},
        {"type": "text", "text": "Let me look."},
    ]
    assert flattened(parts) == "\n\n\nLet me look."
    assert host_content(parts) == "Let me look."
    assert host_content("  padded  ") == "padded"


def test_inline_reasoning_and_tool_markup_go() -> None:
    assert without_inline_blocks("<think>plan</think>Answer") == "Answer"
    assert without_inline_blocks("Answer\n<thinking>never closed") == "Answer"
    assert without_inline_blocks('Done.<function name="f">{}</function> ok') == "Done. ok"
    assert without_inline_blocks("Use <function> to declare") == "Use <function> to declare"  # prose stays
    assert without_inline_blocks("a</think>  b") == "ab"


def test_secrets_in_a_reply_are_redacted() -> None:
    assert "ghp_" + "a" * 36 not in host_content("the token is ghp_" + "a" * 36)


def test_a_reply_already_as_the_host_keeps_it_is_the_same_row() -> None:
    row = {"role": "assistant", "content": "ok", "reasoning": None, "finish_reason": "stop"}
    assert made_assistant(row) is row
    called = {"id": "call_7", "call_id": "call_7", "response_item_id": "fc_7", "type": "function"}
    row = {"role": "assistant", "content": "", "reasoning": None, "finish_reason": "tool_calls", "tool_calls": [called]}
    assert made_assistant(row) is row


def test_the_host_row_has_its_bookkeeping_keys() -> None:
    """As upstream ``build_assistant_message`` keeps a reply: ``reasoning`` and ``finish_reason``
    after the content, each call with ``call_id`` and a ``fc_`` ``response_item_id``."""
    call = {"id": "call_abc", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    made = made_assistant({"role": "assistant", "content": None, "tool_calls": [call]})
    assert list(made) == ["role", "content", "reasoning", "finish_reason", "tool_calls"]
    assert made["content"] == "" and made["reasoning"] is None and made["finish_reason"] == "tool_calls"
    assert made["tool_calls"] == [{"id": "call_abc", "call_id": "call_abc", "response_item_id": "fc_abc", **call}]
    thought = made_assistant({"role": "assistant", "content": "ok", "reasoning_content": "hmm"})
    assert (
        thought["reasoning"] == "hmm" and thought["reasoning_content"] == "hmm" and thought["finish_reason"] == "stop"
    )
    assert host_tool_call({"id": "toolu_01A.b"})["response_item_id"] == "fc_toolu_01Ab"
    assert host_tool_call({"id": "call_1|fc_9"}) == {
        "id": "call_1|fc_9",
        "call_id": "call_1",
        "response_item_id": "fc_9",
    }
    assert host_tool_call({"id": "fc_5"})["call_id"] == "fc_5"
    assert host_tool_call({"id": ""}) == {"id": ""}  # no id to derive from: left as recorded


def test_a_replay_sends_the_rows_the_host_keeps_except_a_hermes_recordings() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "assistant", "content": [{"type": "text", "text": "<think>hm</think> Finished."}]},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "bye"},
    ]
    made, kept = Requests(), Requests()
    replay(Transcript("a", rows, "sys", []), observers=[made], probes=False)
    replay(Transcript("a", rows, "sys", [], source_format="hermes-session"), observers=[kept], probes=False)
    assert made.sent[-1][2]["content"] == "" and made.sent[-1][4]["content"] == "Finished."
    assert kept.sent[-1][2]["content"] is None
