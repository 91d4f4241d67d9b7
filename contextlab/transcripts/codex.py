"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), current and older layout.

Current layout: every line is ``{timestamp, type, payload}`` with ``type`` one of ``session_meta``,
``turn_context``, ``response_item``, ``event_msg`` or ``compacted``. Older layout: the first line is
the session meta itself (``{id, timestamp, instructions, git}``) and the following lines are bare
response items (plus ``{"record_type": "state"}`` lines). The oldest (TypeScript) CLI saved one JSON
object ``{session, items}``.

Mapping (Responses API items to chat messages): ``message`` items by role (``developer`` is a system
message); one provider response's ``reasoning`` (summary text), assistant ``message`` and
``function_call`` / ``custom_tool_call`` / ``local_shell_call`` items become one assistant message
with ``tool_calls``; ``*_output`` items become ``tool`` messages. ``event_msg`` of type
``token_count`` closes the response and carries its usage (``last_token_usage``), recorded in the
Responses API shape (``input_tokens`` with ``input_tokens_details.cached_tokens``) so cache
calibration reads it correctly. A ``compacted`` line is a compaction event (its ``message`` is the
summary). ``event_msg`` lines that repeat response items for the UI are skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.io import token_count
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import CompactionEvent, RecordedUsage, Transcript
from contextlab.transcripts.per_request import parse_time

LINE_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
# Tuples, not sets: membership tests on untrusted JSON must not hash a list or a dict.
ITEM_TYPES = (
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
)


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    """A current-layout rollout (wrapped lines) or an older one (meta line, then bare items)."""
    first = rows[0][1]
    if not isinstance(first, dict):
        return False
    if first.get("type") in LINE_TYPES and isinstance(first.get("payload"), dict):
        return True
    if "id" in first and "timestamp" in first and "type" not in first and len(rows) > 1:
        second = rows[1][1]
        return isinstance(second, dict) and (second.get("type") in ITEM_TYPES or "record_type" in second)
    return False


def looks_like(document: Any) -> bool:
    """The oldest layout: one JSON object ``{session, items}``."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("items"), list)
        and isinstance(document.get("session"), dict)
    )


def load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    builder = _Builder(path)
    wrapped = isinstance(rows[0][1], dict) and rows[0][1].get("type") in LINE_TYPES
    for number, row in rows:
        where = f"line {number}"
        if not isinstance(row, dict):
            raise TranscriptError(builder.source, where, f"expected a JSON object, got {type(row).__name__}")
        if wrapped:
            builder.wrapped(row, where)
        elif number == rows[0][0]:
            builder.meta(row)
        elif "record_type" in row:
            builder.skipped["state"] += 1
        else:
            builder.item(row, where, parse_time(row.get("timestamp")))
    return [builder.finish()]


def load(path: Path, document: dict[str, Any]) -> list[Transcript]:
    builder = _Builder(path)
    builder.meta(document["session"])
    for i, item in enumerate(document["items"]):
        if not isinstance(item, dict):
            raise TranscriptError(builder.source, f"item {i}", f"expected an object, got {type(item).__name__}")
        builder.item(item, f"item {i}", None)
    return [builder.finish()]


class _Builder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.source = str(path)
        self.log = ImportLog(self.source)
        self.messages: list[Message] = []
        self.usage: dict[int, RecordedUsage] = {}
        self.timestamps: dict[int, float] = {}
        self.events: list[CompactionEvent] = []
        self.skipped: Counter[str] = Counter()
        self.system_prompt: str | None = None
        self.model: str | None = None
        self.session_id: str | None = None
        self.metadata: dict[str, Any] = {}
        self.draft: Message | None = None
        self.draft_time: float | None = None
        self.usage_taken = -1  # index of the assistant message the latest usage went to
        self.last_assistant = -1  # kept by _append: a usage event must not rescan the history

    # ------------------------------------------------------------------ lines

    def wrapped(self, row: dict[str, Any], where: str) -> None:
        kind, payload = row.get("type"), row.get("payload")
        if not isinstance(payload, dict):
            raise TranscriptError(self.source, where, "field 'payload': expected an object")
        stamp = parse_time(row.get("timestamp"))
        if kind == "session_meta":
            self.meta(payload)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
        elif kind == "response_item":
            self.item(payload, where, stamp)
        elif kind == "event_msg":
            self.event(payload, where)
        elif kind == "compacted":
            self.flush()
            summary = payload.get("message")
            self.events.append(
                CompactionEvent(len(self.messages), "auto", summary=summary if isinstance(summary, str) else None)
            )
        else:
            self.skipped[str(kind)] += 1

    def meta(self, payload: dict[str, Any]) -> None:
        self.session_id = str(payload.get("id") or "") or None
        instructions = payload.get("instructions")
        base = payload.get("base_instructions")
        if isinstance(base, dict) and isinstance(base.get("text"), str):
            instructions = base["text"]
        if isinstance(instructions, str) and instructions.strip():
            self.system_prompt = instructions
        for key in ("cwd", "cli_version", "originator", "source", "model_provider"):
            if isinstance(payload.get(key), str):
                self.metadata[key] = payload[key]

    def event(self, payload: dict[str, Any], where: str) -> None:
        if payload.get("type") != "token_count":
            self.skipped[f"event_msg:{payload.get('type')}"] += 1
            return
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return  # a rate-limit-only update
        self.flush()
        index = self.last_assistant
        if index < 0 or index == self.usage_taken:
            return  # repeated for the same response
        self.usage[index] = _usage(info["last_token_usage"], self.source, where)
        self.usage_taken = index
        if isinstance(info.get("model_context_window"), int):
            self.metadata["model_context_window"] = info["model_context_window"]

    # ------------------------------------------------------------------ items

    def item(self, item: dict[str, Any], where: str, stamp: float | None) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item, where, stamp)
        elif kind == "reasoning":
            texts = [p.get("text") for p in item.get("summary") or [] if isinstance(p, dict)]
            texts += [p.get("text") for p in item.get("content") or [] if isinstance(p, dict)]
            joined = "\n".join(t for t in texts if isinstance(t, str))
            draft = self._draft(stamp)
            if joined:
                previous = draft.get("reasoning_content")
                draft["reasoning_content"] = f"{previous}\n{joined}" if previous else joined
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._draft(stamp).setdefault("tool_calls", []).append(_call(item, kind, self.source, where))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.flush()
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise TranscriptError(self.source, where, f"{kind}: field 'call_id' must be a non-empty string")
            self._append({"role": "tool", "tool_call_id": call_id, "content": _output_text(item.get("output"))}, stamp)
        else:
            self.skipped[f"item:{kind}"] += 1

    def _message(self, item: dict[str, Any], where: str, stamp: float | None) -> None:
        role = item.get("role")
        text = _content_text(item.get("content"), self.source, where)
        if role == "assistant":
            draft = self._draft(stamp)
            previous = draft.get("content")
            draft["content"] = f"{previous}\n{text}" if previous else text
            return
        if role not in ("user", "developer", "system"):
            raise TranscriptError(self.source, where, f"field 'role': unknown role {role!r}")
        self.flush()
        self._append({"role": "user" if role == "user" else "system", "content": text}, stamp)

    def _draft(self, stamp: float | None) -> Message:
        if self.draft is None:
            self.draft = {"role": "assistant", "content": None}
            self.draft_time = stamp
        return self.draft

    def flush(self) -> None:
        if self.draft is not None:
            draft, self.draft = self.draft, None
            if draft.get("content") is None and not draft.get("tool_calls"):
                draft["content"] = ""
            self._append(draft, self.draft_time)

    def _append(self, message: Message, stamp: float | None) -> None:
        if stamp is not None:
            self.timestamps[len(self.messages)] = stamp
        if message["role"] == "assistant":
            self.last_assistant = len(self.messages)
        self.messages.append(message)

    def finish(self) -> Transcript:
        self.flush()
        if not self.messages:
            raise TranscriptError(self.source, None, "no conversation items: expected a Codex rollout with messages")
        if self.skipped:
            self.metadata["skipped_lines"] = dict(sorted(self.skipped.items()))
        return Transcript(
            transcript_id=self.session_id or self.path.name.split(".")[0],
            messages=self.messages,
            system_prompt=self.system_prompt,
            usage=self.usage,
            timestamps=self.timestamps,
            events=self.events,
            source=self.source,
            source_format="codex",
            model=self.model,
            metadata=self.log.into(self.metadata),
        )


def _content_text(content: Any, source: str, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TranscriptError(source, where, "field 'content': expected a list of content parts")
    texts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "input_image":
            texts.append("[image]")
    return "\n".join(texts)


def _call(item: dict[str, Any], kind: str, source: str, where: str) -> dict[str, Any]:
    call_id = item.get("call_id") or item.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise TranscriptError(source, where, f"{kind}: field 'call_id' must be a non-empty string")
    if kind == "local_shell_call":
        name, arguments = "local_shell", json.dumps(item.get("action") or {}, ensure_ascii=False)
    else:
        named = item.get("name")
        if not isinstance(named, str):
            raise TranscriptError(source, where, f"{kind}: field 'name' must be a string")
        name = named
        raw = item.get("arguments") if kind == "function_call" else item.get("input")
        arguments = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {}, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return str(output["content"])
    if isinstance(output, list):
        return "\n".join(str(p.get("text")) for p in output if isinstance(p, dict) and isinstance(p.get("text"), str))
    return json.dumps(output, ensure_ascii=False)


def _usage(raw: dict[str, Any], source: str, where: str) -> RecordedUsage:
    try:
        total = token_count(raw.get("input_tokens"), "last_token_usage.input_tokens")
        cached = token_count(raw.get("cached_input_tokens"), "last_token_usage.cached_input_tokens")
        output = token_count(raw.get("output_tokens"), "last_token_usage.output_tokens")
        reasoning = token_count(raw.get("reasoning_output_tokens"), "last_token_usage.reasoning_output_tokens")
    except ValueError as error:
        raise TranscriptError(source, where, str(error)) from None
    responses_shape = {
        "input_tokens": total,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": total + output,
    }
    return RecordedUsage(total, output, cache_read_tokens=cached, reasoning_tokens=reasoning, raw=responses_shape)
