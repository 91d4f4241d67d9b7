"""OpenHands event streams: a saved trajectory (a JSON list of events) and evaluation ``output.jsonl``
(one instance a line, its events in ``history``; older files hold ``[action, observation]`` pairs).

An event is an action (``action`` + ``args``) or an observation (``observation`` + ``content``),
from ``source`` ``user``, ``agent`` or ``environment``. With native function calling an agent
action carries ``tool_call_metadata``: the provider's ``model_response`` (its assistant message with
every ``tool_calls`` entry, and its ``usage``) and the ``tool_call_id``; the actions of one response
share it and make one assistant message, and each observation with ``tool_call_metadata`` is the
``tool`` message answering its call. Without function calling, the agent's action is its assistant
text and the observation comes back as a user message. The ``system`` action is the system prompt
(its ``tools`` the tool schemas); ``condensation`` actions are compaction events. Bookkeeping events
(agent state changes, recalls, null observations) are skipped and counted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import CompactionEvent, RecordedUsage, Transcript
from contextlab.transcripts.openai_chat import check_message, usage_from_openai
from contextlab.transcripts.per_request import parse_time

SKIPPED = frozenset({"change_agent_state", "agent_state_changed", "recall", "null", "think", "condensation_request"})


def is_event(value: Any) -> bool:
    return isinstance(value, dict) and ("action" in value or "observation" in value) and "source" in value


def _is_pair(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(x, dict) for x in value)
        and ("action" in value[0] or "observation" in value[1])
    )


def looks_like(document: Any) -> bool:
    """A saved trajectory: a list of events (or an object holding them in ``history``)."""
    if isinstance(document, list):
        return bool(document) and is_event(document[0])
    return _is_instance(document)


def _is_instance(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        return False
    history = value["history"]
    return bool(history) and (is_event(history[0]) or _is_pair(history[0])) and "trajectory" not in value


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    return _is_instance(rows[0][1])


def load(path: Path, document: Any) -> list[Transcript]:
    stem = path.name.split(".")[0]
    if isinstance(document, list):
        return [_transcript(path, document, stem, "", {})]
    return [_instance(path, document, stem, "")]


def load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    stem = path.name.split(".")[0]
    out = []
    for number, row in rows:
        if not _is_instance(row):
            raise TranscriptError(str(path), f"line {number}", "expected an OpenHands instance with a 'history' list")
        out.append(_instance(path, row, f"{stem}#{number}", f"line {number}, "))
    return out


def _instance(path: Path, row: dict[str, Any], default_id: str, where: str) -> Transcript:
    history = row["history"]
    events: list[Any] = []
    for pair in history:
        events.extend(pair if _is_pair(pair) else [pair])
    metadata: dict[str, Any] = {k: row[k] for k in ("instance_id", "test_result", "error", "metrics") if k in row}
    transcript_id = str(row.get("instance_id") or default_id)
    return _transcript(path, events, transcript_id, where, metadata)


def _transcript(path: Path, events: list[Any], transcript_id: str, where: str, metadata: dict[str, Any]) -> Transcript:
    builder = _Builder(str(path))
    for i, event in enumerate(events):
        at = f"{where}event {i}"
        if not isinstance(event, dict):
            raise TranscriptError(builder.source, at, f"expected an event object, got {type(event).__name__}")
        builder.feed(event, at)
    if not builder.messages:
        raise TranscriptError(builder.source, where.rstrip(", ") or None, "no messages: expected OpenHands events")
    if builder.skipped:
        metadata["skipped_events"] = dict(sorted(builder.skipped.items()))
    return Transcript(
        transcript_id=transcript_id,
        messages=builder.messages,
        system_prompt=builder.system_prompt,
        tools=builder.tools,
        usage=builder.usage,
        timestamps=builder.timestamps,
        events=builder.events,
        source=builder.source,
        source_format="openhands",
        model=builder.model,
        metadata=builder.log.into(metadata),
    )


class _Builder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.log = ImportLog(source)
        self.messages: list[Message] = []
        self.usage: dict[int, RecordedUsage] = {}
        self.timestamps: dict[int, float] = {}
        self.events: list[CompactionEvent] = []
        self.skipped: Counter[str] = Counter()
        self.system_prompt: str | None = None
        self.tools: list[dict[str, Any]] = []
        self.model: str | None = None
        self.responses: set[str] = set()  # model_response ids already turned into a message
        self.calls: set[str] = set()
        self.text_agent = False  # the last agent action had no native tool call

    def feed(self, event: dict[str, Any], where: str) -> None:
        stamp = parse_time(event.get("timestamp"))
        if "action" in event:
            self._action(event, str(event.get("action")), where, stamp)
        else:
            self._observation(event, str(event.get("observation")), where, stamp)

    def _add(self, message: Message, stamp: float | None) -> int:
        if stamp is not None:
            self.timestamps[len(self.messages)] = stamp
        self.messages.append(message)
        return len(self.messages) - 1

    def _action(self, event: dict[str, Any], kind: str, where: str, stamp: float | None) -> None:
        args: dict[str, Any] = event["args"] if isinstance(event.get("args"), dict) else {}
        source = event.get("source")
        if kind == "system":
            content = args.get("content")
            if isinstance(content, str) and self.system_prompt is None and not self.messages:
                self.system_prompt = content
                tools = args.get("tools")
                self.tools = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
            return
        if kind == "condensation":
            summary = args.get("summary")
            self.events.append(
                CompactionEvent(len(self.messages), "auto", summary=summary if isinstance(summary, str) else None)
            )
            return
        if kind in SKIPPED:
            self.skipped[kind] += 1
            return
        metadata = event.get("tool_call_metadata")
        if source != "user" and isinstance(metadata, dict):
            self._tool_action(metadata, args, where, stamp)
            return
        text = _action_text(event, args)
        if source == "user":
            self.text_agent = False
            self._add({"role": "user", "content": text}, stamp)
        elif kind == "message" or kind == "finish" or text:
            self.text_agent = kind != "message" and kind != "finish"
            self._add({"role": "assistant", "content": text}, stamp)
        else:
            self.skipped[kind] += 1

    def _tool_action(self, metadata: dict[str, Any], args: dict[str, Any], where: str, stamp: float | None) -> None:
        self.text_agent = False
        response = metadata.get("model_response")
        response_id = str(response.get("id") or "") if isinstance(response, dict) else ""
        if response_id and response_id in self.responses:
            return  # a later action of a response already added
        message: Message | None = None
        if isinstance(response, dict):
            choices = response.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                raw = choices[0].get("message")
                if isinstance(raw, dict):
                    message = check_message({**raw, "role": "assistant"}, self.source, f"{where}, model_response")
                    message = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
            if isinstance(response.get("model"), str):
                self.model = self.model or response["model"]
        if message is None:
            call_id = metadata.get("tool_call_id")
            name = metadata.get("function_name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise TranscriptError(
                    self.source, where, "tool_call_metadata: expected 'tool_call_id' and 'function_name' strings"
                )
            arguments = json.dumps({k: v for k, v in args.items() if k != "thought"}, ensure_ascii=False)
            thought = args.get("thought")
            message = {
                "role": "assistant",
                "content": thought if isinstance(thought, str) and thought else None,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            }
        if response_id:
            self.responses.add(response_id)
        index = self._add(message, stamp)
        for call in message.get("tool_calls") or []:
            self.calls.add(str(call.get("id")))
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            try:
                self.usage[index] = usage_from_openai(usage)
            except ValueError as error:
                raise TranscriptError(self.source, f"{where}, model_response", str(error)) from None

    def _observation(self, event: dict[str, Any], kind: str, where: str, stamp: float | None) -> None:
        if kind in SKIPPED or kind == "condensation":
            self.skipped[kind] += 1
            return
        content = event.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        metadata = event.get("tool_call_metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("tool_call_id"), str):
            call_id = metadata["tool_call_id"]
            if call_id not in self.calls:
                self.log.warn(where, f"observation for unknown tool call {call_id!r}; kept as a tool message")
            self._add({"role": "tool", "tool_call_id": call_id, "content": text}, stamp)
        elif self.text_agent or event.get("source") == "user":
            self.text_agent = False
            self._add({"role": "user", "content": text}, stamp)
        else:
            self.skipped[kind] += 1


def _action_text(event: dict[str, Any], args: dict[str, Any]) -> str:
    for key in ("content", "final_thought", "thought", "command", "code"):
        value = args.get(key)
        if isinstance(value, str) and value:
            if key == "thought" and isinstance(args.get("command"), str) and args["command"]:
                return f"{value}\n{args['command']}"
            return value
    message = event.get("message")
    return message if isinstance(message, str) else ""
