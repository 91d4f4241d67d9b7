"""SWE-agent, ShareGPT/Hermes, Anthropic Messages API, tau-bench and OpenAI chat importers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from contextlab.errors import TranscriptError
from contextlab.messages import validate_messages
from contextlab.transcripts import load_transcript, load_transcripts


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


# --------------------------------------------------------------------------- SWE-agent


def test_swe_agent_history_with_function_calls(tmp_path: Path) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
    }
    doc = {
        "trajectory": [{"action": "ls", "observation": "a.py", "response": "...", "thought": "look"}],
        "history": [
            {
                "role": "system",
                "content": "You are SWE-agent.",
                "agent": "main",
                "message_type": "system_prompt",
            },
            {
                "role": "user",
                "content": "Demo task",
                "agent": "main",
                "is_demo": True,
                "message_type": "demonstration",
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": "Fix #12", "cache_control": {"type": "ephemeral"}}],
            },
            {
                "role": "assistant",
                "content": "Let me look.",
                "thought": "Let me look.",
                "action": "ls",
                "tool_calls": [call],
                "agent": "main",
                "message_type": "action",
            },
            {
                "role": "tool",
                "content": "a.py",
                "tool_call_ids": ["call_1"],
                "agent": "main",
                "message_type": "observation",
            },
            {"role": "assistant", "content": "submit", "agent": "main", "message_type": "action"},
        ],
        "info": {
            "exit_status": "submitted",
            "model_stats": {"tokens_sent": 1234, "tokens_received": 56, "api_calls": 2},
        },
    }
    t = load_transcript(_write(tmp_path / "django__django-1.traj", doc))
    assert t.source_format == "swe-agent" and t.system_prompt == "You are SWE-agent."
    assert [m["role"] for m in t.messages] == ["user", "user", "assistant", "tool", "assistant"]
    assert t.messages[0]["display_kind"] == "demo"
    assert t.messages[1]["content"] == [{"type": "text", "text": "Fix #12"}]
    assert t.messages[3]["tool_call_id"] == "call_1"
    assert not any(k in m for m in t.messages for k in ("thought", "action", "agent", "message_type"))
    assert t.metadata["model_stats"]["tokens_sent"] == 1234 and t.usage == {}
    assert validate_messages(t.messages) == []


def test_swe_agent_tool_message_without_ids_is_an_error(tmp_path: Path) -> None:
    doc = {"history": [{"role": "user", "content": "x"}, {"role": "tool", "content": "out"}], "info": {}}
    with pytest.raises(TranscriptError, match=r"history 1: a tool message needs 'tool_call_ids'"):
        load_transcripts(_write(tmp_path / "x.traj", doc))


# --------------------------------------------------------------------------- ShareGPT / Hermes

HERMES_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within <tools> </tools> "
    "XML tags.\n<tools>\n"
    '[{"name": "web_search", "description": "Search", "parameters": {"type": "object"}}]\n'
    "</tools>\nFor each call return a JSON object within <tool_call></tool_call> tags."
)


def test_hermes_trajectory_tool_calls_and_responses(tmp_path: Path) -> None:
    conv = {
        "conversations": [
            {"from": "system", "value": HERMES_SYSTEM},
            {"from": "human", "value": "Weather in Oslo and Bergen?"},
            {
                "from": "gpt",
                "value": "<think>\nTwo searches.\n</think>\n"
                '<tool_call>\n{"name": "web_search", "arguments": {"q": "Oslo"}}\n</tool_call>\n'
                '<tool_call>\n{"name": "web_search", "arguments": {"q": "Bergen"}}\n</tool_call>',
            },
            {
                "from": "tool",
                "value": '<tool_response>\n{"name": "web_search", "content": "Oslo: 3C"}\n</tool_response>\n'
                '<tool_response>\n{"name": "web_search", "content": {"Bergen": "rain"}}\n</tool_response>',
            },
            {"from": "gpt", "value": "Oslo is 3C; Bergen has rain."},
        ],
        "timestamp": "2026-01-02T10:00:00",
        "model": "hermes-4",
        "completed": True,
    }
    path = tmp_path / "trajectories.jsonl"
    path.write_text(json.dumps(conv) + "\n" + json.dumps(conv) + "\n")
    found = load_transcripts(path)
    assert len(found) == 2
    t = found[0]
    assert t.source_format == "sharegpt" and t.model == "hermes-4"
    assert t.tools[0]["function"]["name"] == "web_search" and t.metadata["tools_from_system_prompt"]
    assert '"web_search"' not in (t.system_prompt or "")
    assert [m["role"] for m in t.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    calls = t.messages[1]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"q": "Oslo"}, {"q": "Bergen"}]
    assert t.messages[1]["reasoning_content"] == "Two searches." and t.messages[1]["content"] is None
    assert [m["tool_call_id"] for m in t.messages[2:4]] == [c["id"] for c in calls]
    assert t.messages[3]["content"] == '{"Bergen": "rain"}'
    assert validate_messages(t.messages) == []


def test_plain_sharegpt_and_bad_sender(tmp_path: Path) -> None:
    doc = [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}]
    t = load_transcript(_write(tmp_path / "sg.json", doc))
    assert [m["role"] for m in t.messages] == ["user", "assistant"]
    bad = {"conversations": [{"from": "human", "value": "hi"}, {"from": "robot", "value": "x"}]}
    with pytest.raises(TranscriptError, match=r"turn 1: field 'from': unknown sender 'robot'"):
        load_transcripts(_write(tmp_path / "bad.json", bad))


def test_malformed_tool_call_is_kept_as_text_with_a_warning(tmp_path: Path) -> None:
    doc = {
        "conversations": [
            {"from": "human", "value": "go"},
            {"from": "gpt", "value": "<tool_call>{oops</tool_call>"},
        ]
    }
    with pytest.warns(UserWarning, match="not valid JSON"):
        t = load_transcript(_write(tmp_path / "sg.json", doc))
    assert t.messages[1]["content"] == "<tool_call>{oops</tool_call>"
    assert t.metadata["import_warnings"]


# --------------------------------------------------------------------------- Anthropic Messages API


def test_anthropic_request_response_pair(tmp_path: Path) -> None:
    pair = {
        "request": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "call it", "signature": "s"},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "get_weather",
                            "input": {"city": "Oslo"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [{"type": "text", "text": "3C"}],
                        },
                        {"type": "text", "text": "thanks"},
                    ],
                },
            ],
        },
        "response": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "3C in Oslo."}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 20,
                "cache_read_input_tokens": 300,
                "output_tokens": 7,
            },
        },
    }
    t = load_transcript(_write(tmp_path / "call.json", pair))
    assert t.source_format == "anthropic" and t.system_prompt == "Be brief."
    assert t.tools == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
        }
    ]
    assert [m["role"] for m in t.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert t.messages[1]["reasoning_content"] == "call it"
    assert t.messages[2]["content"] == "3C"
    u = t.usage[4]
    assert (u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.completion_tokens) == (
        330,
        300,
        20,
        7,
    )
    assert validate_messages(t.messages) == []
    many = tmp_path / "calls.jsonl"
    many.write_text(json.dumps(pair) + "\n" + json.dumps(pair) + "\n")
    assert len(load_transcripts(many)) == 2


def test_anthropic_unknown_role_names_the_message(tmp_path: Path) -> None:
    doc = {"system": "x", "messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}]}
    with pytest.raises(TranscriptError, match=r"message 1: field 'role': unknown role 'bot'"):
        load_transcripts(_write(tmp_path / "req.json", doc))


# --------------------------------------------------------------------------- OpenAI and tau-bench


def test_openai_json_jsonl_and_gzip(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a", "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
    ]
    t = load_transcript(_write(tmp_path / "chat.json", {"messages": messages}))
    assert t.system_prompt == "s" and t.usage[1].prompt_tokens == 5
    gz = tmp_path / "chat.jsonl.gz"
    gz.write_bytes(gzip.compress("".join(json.dumps(m) + "\n" for m in messages).encode()))
    assert load_transcript(gz).messages == t.messages


def test_every_tau_bench_run_loads(shared_transcripts: Path) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    raw = json.loads(path.read_text())
    found = load_transcripts(path)
    assert len(found) == len(raw) == 200
    for run, t in zip(raw, found, strict=True):
        assert len(t.messages) == len(run["traj"]) - (run["traj"][0]["role"] == "system")
        calls = sum(len(m.get("tool_calls") or []) for m in run["traj"])
        assert sum(len(m.get("tool_calls") or []) for m in t.messages) == calls
        assert validate_messages(t.messages) == [], t.transcript_id


def test_one_line_files_are_sniffed_by_content(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text('{"role": "user", "content": "hi"}\n')
    assert load_transcript(one).messages == [{"role": "user", "content": "hi"}]
    line = {"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    cc = _write(tmp_path / "session.jsonl", line)
    assert load_transcript(cc).source_format == "claude-code"
