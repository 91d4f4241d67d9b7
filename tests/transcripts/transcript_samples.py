"""Small valid files of every supported format, for the bad-input and property tests."""

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
    """The file text of a sample (JSON, or one JSON value per line)."""
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
