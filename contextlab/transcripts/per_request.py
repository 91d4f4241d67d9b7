"""Per-request logs: every entry is one full provider request (and its response); the conversation
is rebuilt from the growing prefix instead of loading N overlapping conversations.

A request whose messages start with everything an earlier conversation holds (its requests and the
responses they got) continues that conversation: only the new messages are appended, then the
response, which keeps the request's recorded usage. A request that continues nothing starts another
conversation (a side request such as a title or quota check, or a session restarted after a
compaction the log does not show). Conversations are returned largest first, so index 0 is the main
one. Messages are compared by what the provider sees (role, text, tool calls and results), so
cache-control markers and thinking blocks the client drops from history do not break the prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from contextlab.engine import Message
from contextlab.messages import content_text, tool_calls
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage, Transcript


@dataclass
class Step:
    """One recorded provider request: the messages sent and what came back."""

    messages: list[Message]
    response: Message | None
    usage: RecordedUsage | None = None
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    timestamp: float | None = None
    where: str = ""
    provider: str = ""


@dataclass
class _Thread:
    messages: list[Message] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    usage: dict[int, RecordedUsage] = field(default_factory=dict)
    timestamps: dict[int, float] = field(default_factory=dict)
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    requests: int = 0
    first: int = 0

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.keys.append(message_key(message))


def message_key(message: Message) -> tuple[Any, ...]:
    """What the provider sees of a message, for prefix comparison (markers and thinking ignored)."""
    calls = tuple((str(c.get("id") or ""), _call_name(c), _canonical_arguments(c)) for c in tool_calls(message))
    return (
        message.get("role"),
        content_text(message).strip(),
        str(message.get("tool_call_id") or ""),
        calls,
    )


def _call_name(call: dict[str, Any]) -> str:
    fn = call.get("function")
    return str(fn.get("name", "")) if isinstance(fn, dict) else ""


def _canonical_arguments(call: dict[str, Any]) -> str:
    fn = call.get("function")
    args = fn.get("arguments", "") if isinstance(fn, dict) else ""
    if isinstance(args, str):
        return _canonical_json(args)
    return json.dumps(args, sort_keys=True, default=str)


@lru_cache(maxsize=65_536)
def _canonical_json(text: str) -> str:
    # A per-request log repeats every earlier call in every later request: parse each text once.
    try:
        return json.dumps(json.loads(text), sort_keys=True)
    except (ValueError, RecursionError):
        return text


def rebuild(
    steps: list[Step], source: str, stem: str, source_format: str, log: ImportLog, metadata: dict[str, Any]
) -> list[Transcript]:
    """The conversations of a per-request log (largest first)."""
    threads: list[_Thread] = []
    for number, step in enumerate(steps):
        keys = [message_key(m) for m in step.messages]
        thread = _continued(threads, keys, step.system_prompt)
        if thread is None:
            thread = _Thread(system_prompt=step.system_prompt, first=number)
            threads.append(thread)
        for message in step.messages[len(thread.messages) :]:
            thread.add(message)
        thread.tools = step.tools or thread.tools
        thread.model = step.model or thread.model
        thread.requests += 1
        if step.response is None:
            continue
        thread.add(step.response)
        index = len(thread.messages) - 1
        if step.usage is not None:
            thread.usage[index] = step.usage
        if step.timestamp is not None:
            thread.timestamps[index] = step.timestamp
    ordered = sorted(threads, key=lambda t: (-t.requests, t.first))
    out = []
    for k, thread in enumerate(ordered):
        if not thread.messages:
            continue
        meta = {**metadata, "rebuilt_from_requests": thread.requests}
        if len(ordered) > 1:
            meta["conversations_in_file"] = len(ordered)
        out.append(
            Transcript(
                transcript_id=stem if k == 0 else f"{stem}#{k}",
                messages=thread.messages,
                system_prompt=thread.system_prompt,
                tools=thread.tools,
                usage=thread.usage,
                timestamps=thread.timestamps,
                source=source,
                source_format=source_format,
                model=thread.model,
                metadata=log.into(meta) if k == 0 else meta,
            )
        )
    return out


def _continued(threads: list[_Thread], keys: list[Any], system_prompt: str | None) -> _Thread | None:
    """The most recent conversation whose messages this request starts with."""
    best: _Thread | None = None
    for thread in reversed(threads):
        n = len(thread.keys)
        if thread.system_prompt != system_prompt or n > len(keys) or keys[:n] != thread.keys:
            continue
        if best is None or n > len(best.keys):
            best = thread
    return best


def is_growing(conversations: list[Any]) -> bool:
    """True when the second message list starts with the whole first one (and is longer): a log of
    full requests rather than a list of separate conversations."""
    if len(conversations) < 2:
        return False
    first, second = conversations[0], conversations[1]
    if not (isinstance(first, list) and isinstance(second, list)) or not first or len(second) <= len(first):
        return False
    try:
        return [message_key(m) for m in first] == [message_key(m) for m in second[: len(first)]]
    except AttributeError:  # not message objects: let the format's own loader report it
        return False


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from a number (seconds or milliseconds) or an ISO 8601 string; ``None``
    for anything else (timestamps are informative, never required)."""
    import math
    from datetime import datetime

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            return None
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None
