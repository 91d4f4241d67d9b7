"""Small builders for engine behaviour tests."""

from __future__ import annotations

import json
from typing import Any

from contextlab import plugins
from contextlab.engine import ContextEngine
from contextlab.messages import UidMinter, stamp_identity


def load(name: str, context_length: int = 100_000, **params: Any) -> ContextEngine:
    engine = plugins.load_engine(name, params)
    engine.update_model("gpt-4o", context_length)
    return engine


def tool_session(n_calls: int, *, lines: int = 30, users: int = 1, name: str = "read_file") -> list[dict[str, Any]]:
    """user, then ``n_calls`` x (assistant call + tool result); extra users spread evenly; uids stamped."""
    messages: list[dict[str, Any]] = []
    per_user = max(1, n_calls // users)
    for i in range(n_calls):
        if i % per_user == 0 and i // per_user < users:
            messages.append({"role": "user", "content": f"request {i // per_user}: please look at file_{i}.py"})
        call_id = f"call_{i:03d}"
        args = json.dumps({"path": f"src/file_{i}.py"})
        messages.append(
            {
                "role": "assistant",
                "content": f"Reading file {i} because the bug is there.",
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}],
            }
        )
        body = "\n".join(f"file {i} line {k}: value_{i}_{k}" for k in range(lines))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": body})
    stamp_identity(messages, UidMinter(7))
    return messages
