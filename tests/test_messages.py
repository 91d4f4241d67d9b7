"""Wire form, identity, structural validation and request sanitizers."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from contextlab import replay
from contextlab.messages import (
    PERSISTENCE_ONLY_MESSAGE_FIELDS,
    UidMinter,
    WireCache,
    clone_messages,
    deterministic_tool_call_id,
    freeze,
    keeps_thought_signatures,
    merge_user_messages,
    sanitize_request,
    stamp_identity,
    transport_form,
    validate_messages,
    wire_message,
)
from contextlab.transcripts.model import Transcript
from tests.request_log import Requests

STUB = "[Result unavailable — see context summary above]"
"""The host's stub result text (hermes-agent agent/agent_runtime_helpers.py sanitize_api_messages)."""


def call(call_id: str, name: str = "read_file", args: str = '{"path": "a.py"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def test_wire_form_strips_persistence_only_and_underscore_fields() -> None:
    message = {
        "role": "user",
        "content": "  hi  ",
        "message_uid": "a" * 32,
        "timestamp": 1.0,
        "_compressed_summary": True,
        "_db_persisted": True,
        "display_kind": "x",
    }
    assert wire_message(message) == {"role": "user", "content": "hi"}
    assert "message_uid" in PERSISTENCE_ONLY_MESSAGE_FIELDS


def test_wire_form_applies_api_content_and_canonicalizes_tool_arguments() -> None:
    user = {"role": "user", "content": "display", "api_content": "exact bytes sent"}
    assert wire_message(user)["content"] == "exact bytes sent"
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("c1", args='{"b": 1,  "a": 2}')]}
    # The host's canonical form: sorted keys, no spaces, non-ASCII escaped (docs/host-loop.md).
    assert wire_message(assistant)["tool_calls"][0]["function"]["arguments"] == '{"a":2,"b":1}'
    accented = {"role": "assistant", "content": None, "tool_calls": [call("c1", args='{"path": "caf\u00e9.py"}')]}
    assert wire_message(accented)["tool_calls"][0]["function"]["arguments"] == '{"path":"caf\\u00e9.py"}'
    truncated = {"role": "assistant", "content": None, "tool_calls": [call("c1", args='{"a": [1, 2')]}
    assert wire_message(truncated)["tool_calls"][0]["function"]["arguments"] == '{"a": [1, 2]}'  # repaired
    broken = {"role": "assistant", "content": None, "tool_calls": [call("c1", args="{not json")]}
    assert wire_message(broken)["tool_calls"][0]["function"]["arguments"] == "{}"  # unrepairable: sent empty
    assert broken["tool_calls"][0]["function"]["arguments"] == "{not json"  # the history keeps what was recorded


def test_wire_form_replaces_lone_surrogates() -> None:
    assert wire_message({"role": "user", "content": "a\ud800b"})["content"] == "a\ufffdb"
    # Only the surrogates: a question mark or a whole emoji in the same text is sent as it is.
    assert wire_message({"role": "user", "content": "why? \U0001f600 \udc00"})["content"] == "why? \U0001f600 \ufffd"


def test_wire_form_replaces_lone_surrogates_in_every_field_the_host_sweeps() -> None:
    # The host's outbound sweep reaches content parts, names, tool-call ids, names and arguments and
    # any other field (hermes-agent agent/message_sanitization.py, docs/host-loop.md).
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "part \ud83d"}],
        "name": "bot\ud800",
        "reasoning_content": "thought \udfff",
        "extra": {"nested": ["deep \ud83d", 3]},
        "tool_calls": [call("c\ud800", name="read\ud800", args='{"path": "src/a\\ud83d.py", "n": 1}')],
    }
    snapshot = repr(assistant)
    wire = wire_message(assistant, echo_reasoning=True)  # an echo route sends reasoning_content
    assert wire["content"] == [{"type": "text", "text": "part \ufffd"}]
    assert wire["name"] == "bot\ufffd"
    assert wire["reasoning_content"] == "thought \ufffd"
    assert wire["extra"] == {"nested": ["deep \ufffd", 3]}
    sent_call = wire["tool_calls"][0]
    assert sent_call["id"] == "c\ufffd"
    assert sent_call["function"]["name"] == "read\ufffd"
    # Canonical first: the half is written as its ASCII escape, which the sweep leaves (as the host does).
    assert sent_call["function"]["arguments"] == '{"n":1,"path":"src/a\\ud83d.py"}'
    tool = wire_message({"role": "tool", "tool_call_id": "c\ud800", "content": "out \ud83d"})
    assert (tool["tool_call_id"], tool["content"]) == ("c\ufffd", "out \ufffd")  # still answers its call
    assert repr(assistant) == snapshot  # the history row itself is not touched


def test_wire_form_keeps_clean_parts_as_they_are() -> None:
    parts = [{"type": "text", "text": "caf\u00e9 \u2192 ok"}]
    calls = [call("c1", args='{"path":"a.py"}')]  # canonical already
    wire = wire_message({"role": "assistant", "content": parts, "tool_calls": calls})
    assert wire["content"] is parts  # nothing to replace: no copy
    assert wire["tool_calls"][0] is calls[0]


def test_wire_cache_returns_one_object_per_distinct_content() -> None:
    cache = WireCache()
    a = {"role": "user", "content": "same"}
    b = {"role": "user", "content": "same"}
    assert cache.wire(a) is cache.wire(b)
    assert cache.wire({"role": "user", "content": "other"}) is not cache.wire(a)


def test_uids_are_32_hex_and_deterministic_under_a_seed() -> None:
    a, b, c = UidMinter(7), UidMinter(7), UidMinter(8)
    first = [a.new() for _ in range(3)]
    assert first == [b.new() for _ in range(3)]
    assert first != [c.new() for _ in range(3)]
    assert all(len(u) == 32 and int(u, 16) >= 0 for u in first)
    assert len(set(first)) == 3


def test_uids_are_the_uuid4_hex_of_the_seeded_stream() -> None:
    import random
    import uuid

    rng = random.Random("contextlab-uid-3")
    expected = [uuid.UUID(int=rng.getrandbits(128), version=4).hex for _ in range(500)]
    minter = UidMinter(3)
    assert [minter.new() for _ in range(500)] == expected


def test_deterministic_tool_call_id_matches_the_host_rule() -> None:
    expected = "call_" + hashlib.sha256(b"read_file:{}:0").hexdigest()[:12]
    assert deterministic_tool_call_id("read_file", "{}", 0) == expected


def test_stamp_identity_pairs_tool_call_uids_and_keeps_existing_uids() -> None:
    messages = [
        {"role": "user", "content": "go", "message_uid": "u" * 32},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2"), call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
    ]
    stamp_identity(messages, UidMinter(0))
    assert messages[0]["message_uid"] == "u" * 32
    uids = messages[1]["_tool_call_uids"]
    assert set(uids) == {"c1", "c2"}  # a repeated provider id shares one uid
    assert messages[2]["_tool_call_uid"] == uids["c1"]
    assert messages[3]["_tool_call_uid"] == uids["c2"]
    more = [*messages, {"role": "tool", "tool_call_id": "c1", "content": "late"}]
    stamp_identity(more, UidMinter(1), start=4)  # incremental stamping finds the open calls
    assert more[4]["_tool_call_uid"] == uids["c1"]


@pytest.mark.parametrize(
    ("messages", "rules"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], []),
        ([{"role": "tool", "tool_call_id": "x", "content": "r"}], ["leading_tool_message", "orphan_tool_result"]),
        ([{"role": "user", "content": ""}], ["empty_message"]),
        ([{"role": "wizard", "content": "x"}], ["unknown_role"]),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": None, "tool_calls": [call("c1")]}],
            ["unanswered_tool_call"],
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "tool", "tool_call_id": "c1", "content": "r again"},
            ],
            ["duplicate_tool_result"],
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "assistant", "content": "done"},
                {"role": "tool", "tool_call_id": "c1", "content": "late"},
            ],
            ["out_of_order_tool_result"],
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
                {"role": "tool", "content": "r"},
            ],
            ["tool_without_call_id", "unanswered_tool_call"],
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "zz", "content": "r"}],
            ["orphan_tool_result"],
        ),
    ],
)
def test_validation_names_each_rule(messages: list[dict[str, Any]], rules: list[str]) -> None:
    assert sorted(v.rule for v in validate_messages(messages)) == sorted(rules)


def test_violation_points_at_the_message() -> None:
    found = validate_messages([{"role": "user", "content": "a"}, {"role": "user", "content": ""}])
    assert [(v.index, v.rule) for v in found] == [(1, "empty_message")]
    assert str(found[0]).startswith("message 1: empty_message")


def test_sanitizer_drops_orphans_answers_unanswered_calls_and_merges_users() -> None:
    # hermes-agent 0.19.0 and newer upstream sanitize_api_messages: an orphaned result is dropped, an
    # unanswered call keeps its place and gets a stub result right after its row (docs/host-loop.md).
    request = [
        {"role": "system", "content": "s"},
        {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
        {"role": "user", "content": "a", "message_uid": "1" * 32},
        {"role": "user", "content": "b", "message_uid": "2" * 32},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "assistant", "content": "", "reasoning": "thinking only"},
        {"role": "assistant", "content": None, "tool_calls": [call("c9", name="")]},
        {"role": "user", "content": ""},
        {"role": "user", "content": "c"},
    ]
    out = sanitize_request(request)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "user"]
    assert out[1]["content"] == "a\n\nb"
    assert out[1]["message_uid"] == "1" * 32 and out[1]["_absorbed_message_uids"] == ["2" * 32]
    assert out[2] is request[4]  # the call that went unanswered stays
    stub = {"role": "tool", "name": "read_file", "content": STUB, "tool_call_id": "c2"}
    assert out[3] == stub and out[4] is request[5]  # the stub comes before the real results
    assert out[6] == {**stub, "name": "invalid_tool_call", "tool_call_id": "c9"}  # a nameless call's stub
    assert out[7]["content"] == "c"  # no separator next to an empty side
    assert not validate_messages(out)


def test_sanitizer_keeps_unchanged_messages_as_the_same_objects() -> None:
    request = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]
    out = sanitize_request(request)
    assert all(x is y for x, y in zip(out, request, strict=True))


def test_merge_records_absorbed_uids_in_text_order() -> None:
    a = {"role": "user", "content": "A", "message_uid": "a", "_absorbed_message_uids": ["a2"]}
    b = {"role": "user", "content": "B", "message_uid": "b", "_absorbed_message_uids": ["b2"]}
    merged = merge_user_messages(a, b)
    assert merged["message_uid"] == "a"
    assert merged["_absorbed_message_uids"] == ["a2", "b", "b2"]


def test_clone_is_structural_and_freeze_is_content_keyed() -> None:
    original = [{"role": "assistant", "content": None, "tool_calls": [call("c1")]}]
    clone = clone_messages(original)
    clone[0]["tool_calls"][0]["id"] = "changed"
    assert original[0]["tool_calls"][0]["id"] == "c1"
    assert freeze(original[0]) == freeze(clone_messages(original)[0])
    assert freeze(original[0]) != freeze(clone[0])
    hash(freeze(original[0]))


def test_the_transport_drops_what_no_provider_takes_and_keeps_the_rest() -> None:
    """Upstream ``ChatCompletionsTransport.convert_messages``: search-index and Codex keys go, and so
    do the Responses ids of calls and (for any model but Gemini's) their thought signatures."""
    tool_row = {"role": "tool", "name": "terminal", "tool_name": "terminal", "content": "ok", "tool_call_id": "c1"}
    assert transport_form(tool_row) == {"role": "tool", "name": "terminal", "content": "ok", "tool_call_id": "c1"}
    call = {
        "id": "c1",
        "call_id": "c1",
        "response_item_id": "fc_1",
        "extra_content": {"google": {"sig": "x"}},
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [call],
        "codex_message_items": [{}],
        "codex_reasoning_items": [{}],
        "effect_disposition": "applied",
    }
    sent = transport_form(assistant)
    assert sent == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    assert transport_form(assistant, thought_signatures=True)["tool_calls"][0]["extra_content"] == {
        "google": {"sig": "x"}
    }
    assert assistant["tool_calls"][0]["call_id"] == "c1"  # the given row is never changed
    plain = {"role": "user", "content": "hi"}
    assert transport_form(plain) is plain
    assert keeps_thought_signatures("google/gemini-3-pro") and keeps_thought_signatures("gemma-3-27b")
    assert not keeps_thought_signatures("gpt-4o")


def test_a_hermes_recordings_search_index_key_is_estimated_but_never_sent() -> None:
    """The host's rough estimate reads the request copy, which still holds ``tool_name``; the provider
    gets the row without it (and counts the same tokens: no provider reads it)."""
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "terminal", "tool_name": "terminal", "content": "done", "tool_call_id": "c1"},
        {"role": "assistant", "content": "finished"},
    ]
    requests = Requests()
    with_key = replay(
        Transcript("h", rows, "sys", [], source_format="hermes-session"), observers=[requests], probes=False
    )
    without = [{k: v for k, v in r.items() if k != "tool_name"} for r in rows]
    bare = replay(Transcript("h", without, "sys", [], source_format="hermes-session"), probes=False)
    assert "tool_name" not in requests.sent[-1][-1] and requests.sent[-1][-1]["name"] == "terminal"
    assert with_key.trace["prompt_tokens"].tolist() == bare.trace["prompt_tokens"].tolist()
    assert with_key.trace["prompt_tokens_rough"].iloc[-1] > bare.trace["prompt_tokens_rough"].iloc[-1]
