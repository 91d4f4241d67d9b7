"""OpenAI chat JSON / JSONL, the native format and tau-bench; errors name file, line and field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from contextlab import TranscriptError, load_transcript, load_transcripts, save_transcript
from contextlab.transcripts import CompactionEvent, GoldFact, RecordedUsage, Transcript

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "be kind"},
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": "hello",
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}},
    },
]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_json_list_of_messages(tmp_path: Path) -> None:
    t = load_transcript(write(tmp_path / "chat.json", json.dumps(MESSAGES)))
    assert t.system_prompt == "be kind"
    assert [m["role"] for m in t.messages] == ["user", "assistant"]
    assert t.usage[1] == RecordedUsage(prompt_tokens=12, completion_tokens=3, cache_read_tokens=8)
    assert "usage" not in t.messages[1]
    assert t.transcript_id == "chat"


def test_json_object_with_messages_and_tools(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    t = load_transcript(
        write(tmp_path / "obj.json", json.dumps({"id": "conv-1", "messages": MESSAGES, "tools": tools}))
    )
    assert t.transcript_id == "conv-1"
    assert t.tools == tools


def test_json_list_of_conversations_loads_several(tmp_path: Path) -> None:
    path = write(tmp_path / "many.json", json.dumps([{"messages": MESSAGES}, {"messages": MESSAGES[1:]}]))
    found = load_transcripts(path)
    assert len(found) == 2
    assert found[1].system_prompt is None
    assert load_transcript(path, 1).transcript_id == "many#1"
    with pytest.raises(TranscriptError, match="conversation 5 requested, the file holds 2"):
        load_transcript(path, 5)


def test_jsonl_one_message_per_line(tmp_path: Path) -> None:
    path = write(tmp_path / "chat.jsonl", "\n".join(json.dumps(m) for m in MESSAGES) + "\n")
    t = load_transcript(path)
    assert len(t.messages) == 2 and t.system_prompt == "be kind"


def test_jsonl_one_conversation_per_line(tmp_path: Path) -> None:
    lines = [json.dumps(MESSAGES), json.dumps({"messages": MESSAGES[1:]})]
    assert len(load_transcripts(write(tmp_path / "convs.jsonl", "\n".join(lines)))) == 2


def test_gzip_is_detected_by_content(tmp_path: Path) -> None:
    path = tmp_path / "chat.json.gz"
    path.write_bytes(gzip.compress(json.dumps(MESSAGES).encode()))
    assert len(load_transcript(path).messages) == 2


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ('[{"role": "user", "content": "hi"},\n', "line 2", "invalid JSON"),
        ('[{"role": "wizard", "content": "x"}]', "message 0", "unknown role 'wizard'"),
        ('[{"content": "x"}]', "message 0", "field 'role'"),
        ('[{"role": "user", "content": 5}]', "message 0", "field 'content'"),
        ('[{"role": "tool", "content": "x"}]', "message 0", "field 'tool_call_id'"),
        ('[{"role": "assistant", "tool_calls": "x"}]', "message 0", "field 'tool_calls'"),
        ('{"messages": 3}', None, "field 'messages'"),
        ('"just a string"', None, "not a format contextlab reads"),
        ('{"role": "user", "content": "a"}\n{"role": "user", "content": \n', "line 2", "invalid JSON"),
        ('{"role": "user", "content": "a"}\n[1, 2]\n', "line 2", "expected a message object"),
    ],
)
def test_bad_input_names_file_place_and_problem(tmp_path: Path, text: str, where: str | None, what: str) -> None:
    path = write(tmp_path / "bad.json", text)
    with pytest.raises(TranscriptError) as caught:
        load_transcripts(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert what in message
    if where:
        assert where in message
    assert "\n" not in message


def test_missing_empty_and_truncated_gzip_files(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="file not found"):
        load_transcript(tmp_path / "nope.json")
    with pytest.raises(TranscriptError, match="empty file"):
        load_transcript(write(tmp_path / "empty.json", "  \n"))
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(gzip.compress(json.dumps(MESSAGES).encode())[:20])
    with pytest.raises(TranscriptError, match="gzip"):
        load_transcript(truncated)
    with pytest.raises(TranscriptError, match="UTF-8"):
        load_transcript(tmp_path.joinpath("bin.json").write_bytes(b"\xff\xfe[") and tmp_path / "bin.json")


def test_a_file_with_no_conversation_is_an_error_not_an_empty_list(tmp_path: Path) -> None:
    # A recorded provider call whose message list is empty held nothing to replay: loading it used
    # to give [] silently, and converting that wrote a file no loader accepts.
    call = write(tmp_path / "call.json", json.dumps({"request": {"messages": []}}))
    with pytest.raises(TranscriptError, match=r"call\.json: no conversation"):
        load_transcripts(call)


@pytest.mark.parametrize("breaker", ["\x85", "\u2028", "\u2029"])
def test_json_lines_break_only_at_newline(breaker: str, tmp_path: Path) -> None:
    # str.splitlines() also breaks at these, which JSON strings may hold raw (json.dumps escapes
    # the other line breaks it knows, all control characters).
    t = Transcript("nel", [{"role": "user", "content": f"a{breaker}b"}], system_prompt=f"s{breaker}t")
    path = tmp_path / "nel.jsonl"
    save_transcript(t, path)
    assert breaker in path.read_text(encoding="utf-8")  # raw in the file, not escaped
    back = load_transcript(path)
    assert (back.messages, back.system_prompt) == (t.messages, t.system_prompt)


def test_native_round_trip_is_lossless_and_byte_stable(tmp_path: Path) -> None:
    t = Transcript(
        "rt",
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        system_prompt="sys",
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        usage={1: RecordedUsage(10, 2, 5, 1, 0, raw={"input_tokens": 4})},
        timestamps={0: 100.0, 1: 101.5},
        events=[CompactionEvent(1, "auto", None, 1234, "summary text")],
        facts=[GoldFact("f1", "the password is swordfish", 0, "recall", True)],
        source_format="openai",
        model="gpt-4o",
        metadata={"task": 3},
    )
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    save_transcript(t, a)
    save_transcript(t, b)
    assert a.read_bytes() == b.read_bytes()
    back = load_transcript(a)
    for field in (
        "transcript_id",
        "messages",
        "system_prompt",
        "tools",
        "usage",
        "timestamps",
        "events",
        "facts",
        "model",
        "metadata",
    ):
        assert getattr(back, field) == getattr(t, field), field
    assert back.usage[1].raw == {"input_tokens": 4}


def test_tau_bench_file_loads_one_transcript_per_task_and_trial(shared_transcripts: Path) -> None:
    found = load_transcripts(shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json")
    raw = json.loads((shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json").read_text())
    assert len(found) == len(raw) == 200
    for t, run in zip(found, raw, strict=True):
        assert len(t.messages) + 1 == len(run["traj"])  # the system policy is lifted out
        calls = sum(len(m.get("tool_calls") or []) for m in run["traj"])
        assert sum(len(m.get("tool_calls") or []) for m in t.messages) == calls
    assert found[0].source_format == "tau-bench"
    assert found[0].system_prompt and found[0].system_prompt.startswith("# Airline Agent Policy")
