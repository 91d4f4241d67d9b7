"""Small valid files of every supported format, for the bad-input and property tests."""

# ruff: noqa: E501  (sample data: long literal lines read better whole)

from __future__ import annotations

import json
from typing import Any

CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}


def _cc(kind: str, uuid: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": "s",
        "isSidechain": False,
        "timestamp": "2026-02-10T21:11:56.000Z",
        "message": message,
        **extra,
    }


USAGE = {
    "input_tokens": 3,
    "cache_creation_input_tokens": 10,
    "cache_read_input_tokens": 100,
    "output_tokens": 4,
}

SAMPLES: dict[str, tuple[str, Any]] = {
    "openai": (
        "json",
        {
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "call_1", "content": "r"},
                {"role": "assistant", "content": "done"},
            ]
        },
    ),
    "openai-jsonl": ("jsonl", [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
    "tau-bench": (
        "json",
        [
            {
                "task_id": 1,
                "trial": 0,
                "reward": 1.0,
                "info": {},
                "traj": [
                    {"role": "system", "content": "policy"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "call_1", "name": "lookup", "content": "{}"},
                    {"role": "assistant", "content": "ok"},
                ],
            }
        ],
    ),
    "claude-code": (
        "jsonl",
        [
            {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
            _cc("user", "u1", {"role": "user", "content": "fix it"}),
            _cc(
                "assistant",
                "a1",
                {
                    "id": "msg_1",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "usage": USAGE,
                    "content": [{"type": "thinking", "thinking": "t", "signature": "x"}],
                },
            ),
            _cc(
                "assistant",
                "a2",
                {
                    "id": "msg_1",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "usage": USAGE,
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
                },
            ),
            _cc(
                "user",
                "u2",
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
                },
            ),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "b",
                "compactMetadata": {"trigger": "auto", "preTokens": 9},
            },
            _cc("user", "u3", {"role": "user", "content": "summary"}, isCompactSummary=True),
            _cc(
                "assistant",
                "a3",
                {
                    "id": "msg_2",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "usage": USAGE,
                    "content": [{"type": "text", "text": "done"}],
                },
            ),
        ],
    ),
    "mini-swe-agent": (
        "json",
        {
            "trajectory_format": "mini-swe-agent-1",
            "instance_id": "r-1",
            "info": {"mini_version": "1"},
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {
                    "role": "assistant",
                    "content": "```bash\nls\n```",
                    "extra": {"response": {"created": 1, "usage": {"prompt_tokens": 9, "completion_tokens": 2}}},
                },
                {"role": "user", "content": "<output>a</output>"},
            ],
        },
    ),
    "swe-agent": (
        "json",
        {
            "trajectory": [],
            "info": {"model_stats": {"api_calls": 1}},
            "history": [
                {"role": "system", "content": "s", "agent": "main"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "x", "tool_calls": [CALL], "thought": "t"},
                {"role": "tool", "content": "out", "tool_call_ids": ["call_1"]},
            ],
        },
    ),
    "sharegpt": (
        "jsonl",
        [
            {
                "conversations": [
                    {"from": "system", "value": '<tools>\n[{"name": "lookup", "parameters": {}}]\n</tools>'},
                    {"from": "human", "value": "q"},
                    {
                        "from": "gpt",
                        "value": "<think>hm</think>"
                        '<tool_call>\n{"name": "lookup", "arguments": {"q": 1}}\n</tool_call>',
                    },
                    {
                        "from": "tool",
                        "value": '<tool_response>\n{"name": "lookup", "content": "r"}\n</tool_response>',
                    },
                    {"from": "gpt", "value": "done"},
                ]
            }
        ],
    ),
    "anthropic": (
        "json",
        {
            "request": {
                "system": "s",
                "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
                "messages": [
                    {"role": "user", "content": "q"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}],
                    },
                ],
            },
            "response": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "usage": USAGE,
            },
        },
    ),
}


def render(kind: str, value: Any) -> str:
    """The file text of a sample (JSON, one JSON value per line, or plain text)."""
    if kind == "text":
        return value if isinstance(value, str) else json.dumps(value)
    if kind == "jsonl":
        return "".join(json.dumps(row) + "\n" for row in value)
    return json.dumps(value)


def _native_rows() -> list[Any]:
    from contextlab.transcripts import native
    from contextlab.transcripts.model import CompactionEvent, GoldFact, RecordedUsage, Transcript

    transcript = Transcript(
        "n",
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        system_prompt="s",
        usage={1: RecordedUsage(10, 2, cache_read_tokens=4, raw={"prompt_tokens": 10})},
        timestamps={0: 1.0, 1: 2.5},
        events=[CompactionEvent(1, "auto", pre_tokens=9, summary="sum")],
        facts=[GoldFact("f1", "q", 0, "recall", False)],
        source="x",
    )
    return [json.loads(line) for line in native.dumps(transcript).splitlines()]


SAMPLES["native"] = ("jsonl", _native_rows())


# --------------------------------------------------------------------------- formats of issue 11
# Each built from the format's public definition (see docs/transcripts.md), not from anyone's logs.

ANTHROPIC_REQUEST_1: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "list files"}]}],
}
_ANTHROPIC_EVENTS_1: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Listing."}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"command"'},
    },
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ': "ls"}'}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}},
    {"type": "message_stop"},
]
ANTHROPIC_SSE_1 = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in _ANTHROPIC_EVENTS_1)
ANTHROPIC_REQUEST_2: dict[str, Any] = {
    **ANTHROPIC_REQUEST_1,
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "a.py",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ],
}
ANTHROPIC_REPLY_2 = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "One file: a.py."}],
    "stop_reason": "end_turn",
    "usage": {
        "input_tokens": 30,
        "cache_creation_input_tokens": 40,
        "cache_read_input_tokens": 900,
        "output_tokens": 8,
    },
}

SAMPLES["claude-trace"] = (
    "jsonl",
    [
        {
            "request": {
                "timestamp": 1760000000.0,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "headers": {"content-type": "application/json"},
                "body": ANTHROPIC_REQUEST_1,
            },
            "response": {"timestamp": 1760000001.0, "status_code": 200, "headers": {}, "body_raw": ANTHROPIC_SSE_1},
            "logged_at": "2025-10-09T08:53:21.000Z",
        },
        {
            "request": {
                "timestamp": 1760000002.0,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "headers": {},
                "body": ANTHROPIC_REQUEST_2,
            },
            "response": {"timestamp": 1760000003.0, "status_code": 200, "headers": {}, "body": ANTHROPIC_REPLY_2},
            "logged_at": "2025-10-09T08:53:23.000Z",
        },
    ],
)
SAMPLES["anthropic-pairs"] = (
    "jsonl",
    [
        {
            "request": ANTHROPIC_REQUEST_1,
            "response": {**ANTHROPIC_REPLY_2, "content": ANTHROPIC_REQUEST_2["messages"][1]["content"]},
        },
        {"request": ANTHROPIC_REQUEST_2, "response": ANTHROPIC_REPLY_2},
    ],
)
SAMPLES["codex"] = (
    "jsonl",
    [
        {
            "timestamp": "2025-10-29T00:59:38.317Z",
            "type": "session_meta",
            "payload": {
                "id": "0199-abc",
                "timestamp": "2025-10-29T00:59:38.308Z",
                "cwd": "/w",
                "cli_version": "0.46.0",
                "instructions": None,
            },
        },
        {
            "timestamp": "2025-10-29T00:59:38.317Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>cwd /w</environment_context>"}],
            },
        },
        {
            "timestamp": "2025-10-29T00:59:38.318Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "run the tests"}],
            },
        },
        {
            "timestamp": "2025-10-29T00:59:38.318Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "run the tests", "kind": "plain"},
        },
        {
            "timestamp": "2025-10-29T00:59:38.319Z",
            "type": "turn_context",
            "payload": {"cwd": "/w", "model": "gpt-5-codex"},
        },
        {
            "timestamp": "2025-10-29T00:59:39.5Z",
            "type": "response_item",
            "payload": {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Run pytest"}],
                "encrypted_content": "x",
            },
        },
        {
            "timestamp": "2025-10-29T00:59:39.6Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command": ["pytest", "-q"]}',
                "call_id": "call_A",
            },
        },
        {
            "timestamp": "2025-10-29T00:59:39.7Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {
                    "last_token_usage": {
                        "input_tokens": 2900,
                        "cached_input_tokens": 2048,
                        "output_tokens": 40,
                        "reasoning_output_tokens": 16,
                        "total_tokens": 2940,
                    },
                    "model_context_window": 272000,
                },
            },
        },
        {
            "timestamp": "2025-10-29T00:59:41Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "call_A",
                "output": '{"output": "3 passed", "metadata": {"exit_code": 0}}',
            },
        },
        {"timestamp": "2025-10-29T00:59:42Z", "type": "compacted", "payload": {"message": "Summary: tests pass."}},
        {
            "timestamp": "2025-10-29T00:59:43Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "All 3 tests pass."}],
            },
        },
        {
            "timestamp": "2025-10-29T00:59:43.1Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {
                    "last_token_usage": {
                        "input_tokens": 3000,
                        "cached_input_tokens": 2900,
                        "output_tokens": 9,
                        "reasoning_output_tokens": 0,
                        "total_tokens": 3009,
                    }
                },
            },
        },
    ],
)
SAMPLES["codex-legacy"] = (
    "jsonl",
    [
        {"id": "5973b6c0", "timestamp": "2025-08-01T10:00:00.000Z", "instructions": "Be terse.", "git": {}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": {"content": "a.py", "success": True}},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a.py is there"}]},
    ],
)
_MODEL_RESPONSE = {
    "id": "chatcmpl-1",
    "model": "gpt-4o",
    "choices": [
        {
            "message": {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "toolu_01",
                        "type": "function",
                        "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
                    },
                    {
                        "id": "toolu_02",
                        "type": "function",
                        "function": {"name": "execute_bash", "arguments": '{"command": "pwd"}'},
                    },
                ],
            }
        }
    ],
    "usage": {"prompt_tokens": 5000, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 4096}},
}
_OPENHANDS_EVENTS = [
    {
        "id": 0,
        "timestamp": "2025-06-01T10:00:00",
        "source": "agent",
        "message": "",
        "action": "system",
        "args": {
            "content": "You are OpenHands.",
            "tools": [{"type": "function", "function": {"name": "execute_bash"}}],
        },
    },
    {
        "id": 1,
        "timestamp": "2025-06-01T10:00:01",
        "source": "user",
        "message": "fix it",
        "action": "message",
        "args": {"content": "fix the bug", "image_urls": None},
    },
    {
        "id": 2,
        "timestamp": "2025-06-01T10:00:02",
        "source": "environment",
        "message": "",
        "observation": "agent_state_changed",
        "content": "",
        "extras": {"agent_state": "running"},
    },
    {
        "id": 3,
        "timestamp": "2025-06-01T10:00:03",
        "source": "agent",
        "message": "Running command: ls",
        "action": "run",
        "args": {"command": "ls", "thought": "Let me look."},
        "tool_call_metadata": {
            "function_name": "execute_bash",
            "tool_call_id": "toolu_01",
            "model_response": _MODEL_RESPONSE,
            "total_calls_in_response": 2,
        },
    },
    {
        "id": 4,
        "timestamp": "2025-06-01T10:00:04",
        "source": "agent",
        "message": "Running command: pwd",
        "action": "run",
        "args": {"command": "pwd", "thought": ""},
        "tool_call_metadata": {
            "function_name": "execute_bash",
            "tool_call_id": "toolu_02",
            "model_response": _MODEL_RESPONSE,
            "total_calls_in_response": 2,
        },
    },
    {
        "id": 5,
        "timestamp": "2025-06-01T10:00:05",
        "source": "environment",
        "message": "Command finished",
        "observation": "run",
        "content": "a.py",
        "cause": 3,
        "extras": {"command": "ls", "exit_code": 0},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_01"},
    },
    {
        "id": 6,
        "timestamp": "2025-06-01T10:00:06",
        "source": "environment",
        "message": "Command finished",
        "observation": "run",
        "content": "/w",
        "cause": 4,
        "extras": {"command": "pwd", "exit_code": 0},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_02"},
    },
    {
        "id": 7,
        "timestamp": "2025-06-01T10:00:07",
        "source": "agent",
        "message": "done",
        "action": "message",
        "args": {"content": "Fixed.", "wait_for_response": True},
    },
]
SAMPLES["openhands"] = ("json", _OPENHANDS_EVENTS)
SAMPLES["openhands-output"] = (
    "jsonl",
    [
        {
            "instance_id": "django__django-11099",
            "instruction": "fix",
            "history": _OPENHANDS_EVENTS,
            "metrics": {"accumulated_cost": 0.1},
            "test_result": {"git_patch": ""},
        }
    ],
)
SAMPLES["gemini-cli"] = (
    "json",
    {
        "sessionId": "4a1b",
        "projectHash": "e3b0",
        "startTime": "2025-09-01T10:00:00.000Z",
        "lastUpdated": "2025-09-01T10:05:00.000Z",
        "messages": [
            {"id": "m1", "timestamp": "2025-09-01T10:00:00.000Z", "type": "user", "content": "read a.py"},
            {
                "id": "m2",
                "timestamp": "2025-09-01T10:00:02.000Z",
                "type": "gemini",
                "content": "",
                "model": "gemini-2.5-pro",
                "thoughts": [
                    {"subject": "Reading", "description": "open the file", "timestamp": "2025-09-01T10:00:01.000Z"}
                ],
                "tokens": {"input": 8000, "output": 20, "cached": 6000, "thoughts": 50, "tool": 0, "total": 8070},
                "toolCalls": [
                    {
                        "id": "read_file-1",
                        "name": "read_file",
                        "args": {"absolute_path": "/w/a.py"},
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "read_file-1",
                                    "name": "read_file",
                                    "response": {"output": "print(1)"},
                                }
                            }
                        ],
                        "status": "success",
                        "timestamp": "2025-09-01T10:00:02.500Z",
                    }
                ],
            },
            {"id": "m3", "timestamp": "2025-09-01T10:00:03.000Z", "type": "info", "content": "Tool ran"},
            {
                "id": "m4",
                "timestamp": "2025-09-01T10:00:04.000Z",
                "type": "gemini",
                "content": "It prints 1.",
                "model": "gemini-2.5-pro",
                "tokens": {"input": 8100, "output": 6, "cached": 8000, "thoughts": 0, "tool": 0, "total": 8106},
            },
        ],
    },
)
SAMPLES["gemini-contents"] = (
    "json",
    [
        {"role": "user", "parts": [{"text": "weather in Paris?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"output": "12C"}}}]},
        {"role": "model", "parts": [{"text": "12C in Paris."}]},
    ],
)
SAMPLES["hermes-session"] = (
    "json",
    {
        "session_id": "20250901_100000_ab12cd",
        "model": "anthropic/claude-sonnet-4",
        "platform": "cli",
        "session_start": "2025-09-01T10:00:00",
        "last_updated": "2025-09-01T10:02:00",
        "system_prompt": "You are Hermes.",
        "tools": [{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}}],
        "message_count": 4,
        "messages": [
            {"role": "user", "content": "what is in /w?"},
            {
                "role": "assistant",
                "content": "",
                "reasoning": "check",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "terminal", "arguments": '{"command": "ls /w"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            {"role": "assistant", "content": "Just a.py."},
        ],
    },
)
SAMPLES["hermes-trajectory-repeated-ids"] = (
    "jsonl",
    [
        {
            "conversations": [
                {"from": "system", "value": "You are a function calling AI model."},
                {"from": "human", "value": "check two files"},
                {
                    "from": "gpt",
                    "value": '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n<tool_call>\n{"name": "read_file", "arguments": {"path": "b"}}\n</tool_call>',
                },
                {
                    "from": "tool",
                    "value": '<tool_response>\n{"tool_call_id": "qwen_tc_0", "name": "read_file", "content": "A"}\n</tool_response>\n<tool_response>\n{"tool_call_id": "qwen_tc_0", "name": "read_file", "content": "B"}\n</tool_response>',
                },
                {
                    "from": "gpt",
                    "value": '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>',
                },
                {
                    "from": "tool",
                    "value": '<tool_response>\n{"tool_call_id": "qwen_tc_0", "name": "terminal", "content": "a b"}\n</tool_response>',
                },
                {"from": "gpt", "value": "Both read."},
            ],
            "timestamp": "2025-09-01T10:00:00",
            "model": "qwen3",
            "completed": True,
        }
    ],
)
SAMPLES["openai-legacy-function"] = (
    "json",
    {
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": None, "function_call": {"name": "calc", "arguments": '{"x": "2+2"}'}},
            {"role": "function", "name": "calc", "content": "4"},
            {"role": "assistant", "content": "4"},
        ]
    },
)
SAMPLES["swe-agent-history-only"] = (
    "json",
    {
        "history": [
            {"role": "system", "content": "SWE-agent"},
            {"role": "user", "content": "fix"},
            {"role": "assistant", "content": "ls", "thought": "look", "action": "ls"},
            {"role": "user", "content": "a.py"},
        ]
    },
)
SAMPLES["openai-request-log"] = (
    "jsonl",
    [
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "q1"},
                {"role": "assistant", "content": "a1"},
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2},
        },
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "q1"},
                {"role": "assistant", "content": "a1"},
                {"role": "user", "content": "q2"},
                {"role": "assistant", "content": "a2"},
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 20}},
        },
    ],
)
SAMPLES["otel-genai"] = (
    "json",
    {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "t1",
                                "spanId": f"s{k}",
                                "name": "chat gpt-4o",
                                "startTimeUnixNano": str(1_700_000_000_000_000_000 + k),
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                                    {
                                        "key": "gen_ai.system_instructions",
                                        "value": {
                                            "stringValue": json.dumps([{"type": "text", "content": "Be brief."}])
                                        },
                                    },
                                    {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(inputs)}},
                                    {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([output])}},
                                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(100 + 50 * k)}},
                                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "10"}},
                                ],
                            }
                            for k, (inputs, output) in enumerate(
                                [
                                    (
                                        [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}],
                                        {
                                            "role": "assistant",
                                            "parts": [
                                                {
                                                    "type": "tool_call",
                                                    "id": "c1",
                                                    "name": "weather",
                                                    "arguments": {"city": "Paris"},
                                                }
                                            ],
                                            "finish_reason": "tool_call",
                                        },
                                    ),
                                    (
                                        [
                                            {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
                                            {
                                                "role": "assistant",
                                                "parts": [
                                                    {
                                                        "type": "tool_call",
                                                        "id": "c1",
                                                        "name": "weather",
                                                        "arguments": {"city": "Paris"},
                                                    }
                                                ],
                                            },
                                            {
                                                "role": "tool",
                                                "parts": [
                                                    {"type": "tool_call_response", "id": "c1", "response": "12C"}
                                                ],
                                            },
                                        ],
                                        {
                                            "role": "assistant",
                                            "parts": [{"type": "text", "content": "12C."}],
                                            "finish_reason": "stop",
                                        },
                                    ),
                                ]
                            )
                        ]
                    }
                ],
            }
        ]
    },
)
SAMPLES["langfuse"] = (
    "json",
    {
        "id": "trace-1",
        "observations": [
            {
                "id": "g1",
                "type": "GENERATION",
                "name": "chat",
                "startTime": "2025-09-01T10:00:00.000Z",
                "model": "gpt-4o",
                "input": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
                "output": {"role": "assistant", "content": "hello"},
                "usageDetails": {"input": 12, "output": 2},
            },
            {
                "id": "g2",
                "type": "GENERATION",
                "name": "chat",
                "startTime": "2025-09-01T10:00:05.000Z",
                "model": "gpt-4o",
                "input": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                    {"role": "user", "content": "bye"},
                ],
                "output": {"role": "assistant", "content": "bye!"},
                "usage": {"input": 20, "output": 2, "total": 22},
            },
        ],
    },
)
SAMPLES["aider-chat-history"] = (
    "text",
    "\n# aider chat started at 2025-01-02 10:00:00\n\n> Aider v0.70.0\n> Model: claude-3-5-sonnet with diff edit format\n\n"
    "#### /add a.py\n\n> Added a.py to the chat\n\n#### make it print 2\n\nI'll change the print.\n\n"
    "a.py\n```python\n<<<<<<< SEARCH\nprint(1)\n=======\nprint(2)\n>>>>>>> REPLACE\n```\n\n"
    "> Tokens: 2.3k sent, 1.1k cache write, 120 received. Cost: $0.01 message, $0.01 session.\n> Applied edit to a.py\n\n"
    "#### thanks\n\nYou're welcome.\n\n> Tokens: 2.5k sent, 2.2k cache hit, 8 received.\n",
)
SAMPLES["aider-llm-history"] = (
    "text",
    "TO LLM 2025-01-02T10:00:05\n-------\nSYSTEM Act as an expert developer.\nSYSTEM Always use best practices.\n-------\nUSER make it print 2\n"
    "LLM RESPONSE 2025-01-02T10:00:09\nASSISTANT I'll change the print.\nASSISTANT\nASSISTANT done\n"
    "TO LLM 2025-01-02T10:01:00\n-------\nSYSTEM Act as an expert developer.\nSYSTEM Always use best practices.\n-------\nUSER make it print 2\n"
    "-------\nASSISTANT I'll change the print.\nASSISTANT\nASSISTANT done\n-------\nUSER thanks\n"
    "LLM RESPONSE 2025-01-02T10:01:02\nASSISTANT You're welcome.\n",
)


# --------------------------------------------------------------------------- derived from real recordings
# Real conversations re-expressed in another format's public shape, to exercise an importer at scale.


def _anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-form messages as Messages API messages (tool results folded into user turns)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        text = m.get("content")
        text = (
            text
            if isinstance(text, str)
            else "\n".join(p.get("text", "") for p in text or [] if isinstance(p, dict) and p.get("type") == "text")
        )
        if role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            for call in m.get("tool_calls") or []:
                arguments = call["function"]["arguments"]
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": json.loads(arguments or "{}"),
                    }
                )
            out.append({"role": "assistant", "content": blocks})
            continue
        block = (
            {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text}
            if role == "tool"
            else {"type": "text", "text": text}
        )
        results_only = out and out[-1]["role"] == "user" and all(b["type"] == "tool_result" for b in out[-1]["content"])
        if role == "tool" and results_only:
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return out


def as_claude_trace(transcript: Any) -> list[dict[str, Any]]:
    """One claude-trace entry per request of ``transcript``: the full history so far, then the
    response (thinking included, as the API returns it) with the recorded usage."""
    entries = []
    for i, message in enumerate(transcript.messages):
        if message["role"] != "assistant":
            continue
        (response,) = _anthropic_messages([message])
        if message.get("reasoning_content"):
            response["content"].insert(
                0, {"type": "thinking", "thinking": message["reasoning_content"], "signature": "s"}
            )
        usage = transcript.usage.get(i)
        body = {
            "model": transcript.model or "claude",
            "system": transcript.system_prompt or "",
            "messages": _anthropic_messages(transcript.messages[:i]),
        }
        reply = {
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "content": response["content"],
            "usage": usage.raw if usage else {},
        }
        entries.append(
            {
                "request": {
                    "timestamp": 1_700_000_000 + i,
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {},
                    "body": body,
                },
                "response": {"status_code": 200, "headers": {}, "body": reply},
                "logged_at": "2026-01-01T00:00:00Z",
            }
        )
    return entries


def as_hermes_trajectory(transcript: Any) -> dict[str, Any]:
    """``transcript`` as Hermes Agent saves a trajectory: ShareGPT turns, id-less ``<tool_call>``
    blocks and every ``<tool_response>`` carrying the same provider id (as Qwen-style parsers do)."""
    turns = [{"from": "system", "value": transcript.system_prompt or "You are a function calling AI model."}]
    for m in transcript.messages:
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        if m["role"] == "user":
            turns.append({"from": "human", "value": text})
        elif m["role"] == "assistant":
            blocks = [
                "<tool_call>\n"
                + json.dumps(
                    {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"] or "{}")}
                )
                + "\n</tool_call>"
                for c in m.get("tool_calls") or []
            ]
            turns.append({"from": "gpt", "value": "\n".join([text or "", *blocks]).strip()})
        elif m["role"] == "tool":
            block = (
                "<tool_response>\n"
                + json.dumps({"tool_call_id": "qwen_tc_0", "name": "tool", "content": text})
                + "\n</tool_response>"
            )
            if turns[-1]["from"] == "tool":
                turns[-1]["value"] += "\n" + block
            else:
                turns.append({"from": "tool", "value": block})
    return {"conversations": turns, "model": "hermes", "completed": True}


def write_hermes_state_db(path: Any) -> None:
    """A small Hermes ``state.db`` (columns of upstream ``SCHEMA_SQL``): a session rotated by a
    compaction into a child, with an archived row and a carried-over copy, and a second root."""
    import sqlite3

    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, system_prompt TEXT,
            parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
            input_tokens INTEGER DEFAULT 0, title TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            reasoning TEXT, _compressed_summary INTEGER NOT NULL DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
            compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT, display_kind TEXT);
        """
    )
    call = json.dumps([{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}])
    db.executemany(
        "INSERT INTO sessions (id, source, model, system_prompt, parent_session_id, started_at, end_reason, input_tokens)"
        " VALUES (?, 'cli', 'm', ?, ?, ?, ?, ?)",
        [
            ("s1", "SYS", None, 1.0, "compression", 100),
            ("s2", "SYS", "s1", 2.0, None, 50),
            ("b1", "OTHER", None, 3.0, None, 5),
        ],
    )
    rows = [
        ("s1", "user", "task one", None, None, 1.1, 0, 1, 0),
        ("s1", "assistant", None, None, call, 1.2, 0, 1, 0),
        ("s1", "tool", "out", "c1", None, 1.3, 0, 1, 0),
        ("s1", "assistant", "done one", None, None, 1.4, 0, 1, 0),
        ("s1", "user", "rewound away", None, None, 1.45, 0, 0, 0),  # inactive, not compacted: not history
        ("s2", "user", "[CONTEXT COMPACTION] summary of task one", None, None, 2.0, 1, 1, 0),
        ("s2", "assistant", "done one", None, None, 2.01, 0, 1, 0),  # a copy of the kept tail
        ("s2", "user", "task two", None, None, 2.1, 0, 1, 0),
        ("s2", "user", "old", None, None, 2.15, 0, 0, 1),  # archived in place: still history
        ("s2", "assistant", "done two", None, None, 2.2, 0, 1, 0),
        ("b1", "user", "other chat", None, None, 3.1, 0, 1, 0),
        ("b1", "assistant", "ok", None, None, 3.2, 0, 1, 0),
    ]
    db.executemany(
        "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, timestamp, _compressed_summary,"
        " active, compacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.commit()
    db.close()
