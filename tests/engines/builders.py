"""Small, deterministic conversation builders for engine tests."""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def tool_turn(i: int, body_chars: int = 400, *, user: bool = True, reply_chars: int = 0) -> list[Message]:
    """One user ask, one assistant tool call, its result, and a text reply."""
    out: list[Message] = []
    if user:
        out.append({"role": "user", "content": f"Task {i}: inspect module_{i}.py and report the result."})
    out.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call(f"call_{i}", "read_file", path=f"src/module_{i}.py")],
        }
    )
    body = "\n".join(f"line {k} of module_{i}: value = {k * i}" for k in range(body_chars // 30 + 1))[:body_chars]
    out.append({"role": "tool", "tool_call_id": f"call_{i}", "content": body})
    reply = f"Module {i} looks fine; I will move on because it passes."
    if reply_chars:
        filler = " ".join(f"Observation {k} about module_{i}: nothing unusual." for k in range(reply_chars // 40 + 1))
        reply = f"{reply}\n\n{filler}"[: max(reply_chars, len(reply))]
    out.append({"role": "assistant", "content": reply})
    return out


def conversation(turns: int, body_chars: int = 400, reply_chars: int = 0) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out.extend(tool_turn(i, body_chars, reply_chars=reply_chars))
    return out
