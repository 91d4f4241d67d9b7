"""One recorded provider call (request body + response) as a :class:`~.per_request.Step`.

Shared by every per-request log: Anthropic request/response pairs, claude-trace captures and proxy
logs. Requests are Anthropic Messages API or OpenAI chat bodies; responses are the JSON object or the
raw server-sent-event stream a streaming call returned (reassembled here: text, thinking and tool-call
argument deltas joined, usage from the start and delta events merged).
"""

from __future__ import annotations

import json
import re
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.anthropic_blocks import (
    AssistantDraft,
    anthropic_tools,
    system_text,
    usage_from_anthropic,
    user_messages,
)
from contextlab.transcripts.io import counts_at, json_or_value
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage
from contextlab.transcripts.openai_chat import check_message, usage_from_openai
from contextlab.transcripts.per_request import Step

_SSE_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""Server-sent events end lines at CRLF, LF or CR only (a ``data:`` JSON string may hold U+2028 raw)."""

ANTHROPIC_ONLY_BLOCKS = (
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
)  # a tuple: values may be unhashable


def body_of(value: Any) -> Any:
    """A request or response body: the ``body`` field of a captured HTTP exchange, parsed when it
    is JSON text; the value itself otherwise."""
    if isinstance(value, dict) and "body" in value and not value.keys() & {"messages", "content", "choices", "type"}:
        value = value["body"]
    return json_or_value(value)


def is_request_body(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list)


def step(request: Any, response: Any, source: str, where: str, log: ImportLog, timestamp: float | None) -> Step:
    """The :class:`Step` of one call; raises :class:`TranscriptError` naming ``where`` on a bad shape."""
    body = body_of(request)
    if not is_request_body(body):
        raise TranscriptError(source, where, "field 'request': expected a request body with a 'messages' list")
    raw_response = response.get("body_raw") if isinstance(response, dict) and "body_raw" in response else None
    reply = body_of(response) if raw_response is None else raw_response
    if _is_anthropic_request(body) or _is_anthropic_reply(reply):
        return _anthropic(body, reply, source, where, log, timestamp)
    return _openai(body, reply, source, where, timestamp)


def _is_anthropic_request(body: dict[str, Any]) -> bool:
    if "system" in body and not any(isinstance(m, dict) and m.get("role") == "system" for m in body["messages"]):
        return True
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ANTHROPIC_ONLY_BLOCKS for b in content
        ):
            return True
    return False


def _is_anthropic_reply(reply: Any) -> bool:
    if isinstance(reply, dict):
        return reply.get("type") == "message"
    return isinstance(reply, str) and "event: message_start" in reply


# --------------------------------------------------------------------------- Anthropic


def _anthropic(
    body: dict[str, Any], reply: Any, source: str, where: str, log: ImportLog, timestamp: float | None
) -> Step:
    messages: list[Message] = []
    for i, raw in enumerate(body["messages"]):
        at = f"{where}, message {i}"
        if not isinstance(raw, dict):
            raise TranscriptError(source, at, f"expected a message object, got {type(raw).__name__}")
        role = raw.get("role")
        if role == "assistant":
            draft = AssistantDraft()
            draft.add(raw.get("content"), source, at, log)
            messages.append(draft.message())
        elif role == "user":
            tools, user = user_messages(raw.get("content"), source, at, log)
            messages.extend(tools)
            if user is not None:
                messages.append(user)
        else:
            raise TranscriptError(source, at, f"field 'role': unknown role {role!r} (expected 'user' or 'assistant')")
    if isinstance(reply, str):
        reply = anthropic_sse(reply, source, f"{where}, response")
    response: Message | None = None
    usage: RecordedUsage | None = None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if isinstance(reply, dict) and reply.get("type") == "message":
        draft = AssistantDraft()
        draft.add(reply.get("content", []), source, f"{where}, response", log)
        response = draft.message()
        with counts_at(source, f"{where}, response"):
            usage = usage_from_anthropic(reply.get("usage"))
        model = model or (reply.get("model") if isinstance(reply.get("model"), str) else None)
    elif reply is not None and not (isinstance(reply, dict) and reply.get("type") == "error"):
        log.warn(f"{where}, response", "not an Anthropic message; the request is kept without its response")
    return Step(
        messages=messages,
        response=response,
        usage=usage,
        system_prompt=system_text(body.get("system"), source, f"{where}, field 'system'"),
        tools=anthropic_tools(body.get("tools"), source, f"{where}, field 'tools'"),
        model=model,
        timestamp=timestamp,
        where=where,
        provider="anthropic",
    )


def anthropic_sse(text: str, source: str, where: str) -> dict[str, Any] | None:
    """The final message of a Messages API event stream (``None`` when the stream has no message)."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for event in _sse_data(text):
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
            message["usage"] = dict(message.get("usage") or {})
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            index = _index(event)
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            block = blocks.setdefault(_index(event), {"type": "text", "text": ""})
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
            elif delta.get("type") == "input_json_delta":
                partial.setdefault(_index(event), []).append(str(delta.get("partial_json") or ""))
        elif kind == "message_delta" and message is not None:
            if isinstance(event.get("usage"), dict):
                message["usage"].update({k: v for k, v in event["usage"].items() if v is not None})
            if isinstance(event.get("delta"), dict) and "stop_reason" in event["delta"]:
                message["stop_reason"] = event["delta"]["stop_reason"]
    if message is None:
        return None
    for index, pieces in partial.items():
        text = "".join(pieces)
        try:
            blocks[index]["input"] = json.loads(text) if text else {}
        except ValueError:
            raise TranscriptError(source, where, f"tool_use block {index}: streamed input is not JSON") from None
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else 0


def _sse_data(text: str) -> list[dict[str, Any]]:
    events = []
    for line in _SSE_LINE_BREAK.split(text):
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            value = json.loads(payload)
        except ValueError:
            continue  # a keep-alive or a truncated final line: nothing to reassemble
        if isinstance(value, dict):
            events.append(value)
    return events


# --------------------------------------------------------------------------- OpenAI


def _openai(body: dict[str, Any], reply: Any, source: str, where: str, timestamp: float | None) -> Step:
    messages = [check_message(m, source, f"{where}, message {i}") for i, m in enumerate(body["messages"])]
    system_prompt = None
    if messages and messages[0]["role"] == "system" and isinstance(messages[0].get("content"), str):
        system_prompt = messages.pop(0)["content"]
    if isinstance(reply, str):
        reply = openai_sse(reply)
    response: Message | None = None
    usage: RecordedUsage | None = None
    if isinstance(reply, dict):
        choices = reply.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            raw = choices[0].get("message")
            if isinstance(raw, dict):
                response = check_message({**raw, "role": "assistant"}, source, f"{where}, response")
        if isinstance(reply.get("usage"), dict):
            with counts_at(source, f"{where}, response"):
                usage = usage_from_openai(reply["usage"])
    tools: list[dict[str, Any]] = (
        [t for t in body.get("tools") or [] if isinstance(t, dict)] if isinstance(body.get("tools"), list) else []
    )
    model = body.get("model") if isinstance(body.get("model"), str) else None
    return Step(messages, response, usage, system_prompt, list(tools), model, timestamp, where, "openai")


def openai_sse(text: str) -> dict[str, Any] | None:
    """A chat completion object reassembled from its ``data:`` chunks."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] | None = None
    seen = False
    for chunk in _sse_data(text):
        seen = True
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            continue
        delta = choices[0].get("delta")
        if not isinstance(delta, dict):
            continue
        if isinstance(delta.get("content"), str):
            content.append(delta["content"])
        for piece in delta.get("tool_calls") or []:
            if not isinstance(piece, dict):
                continue
            call = calls.setdefault(
                _index(piece), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            if piece.get("id"):
                call["id"] = str(piece["id"])
            fn: dict[str, Any] = piece["function"] if isinstance(piece.get("function"), dict) else {}
            call["function"]["name"] += str(fn.get("name") or "")
            call["function"]["arguments"] += str(fn.get("arguments") or "")
    if not seen:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"message": message}], **({"usage": usage} if usage else {})}
