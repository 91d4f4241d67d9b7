"""Anthropic Messages API JSON: a request, a response, a ``{request, response}`` pair, or a list of pairs.

A request gives the conversation (``system`` lifted out; ``tools`` converted to OpenAI function
schemas from ``input_schema``); a response is the assistant message that answered it, with its
``usage`` recorded (prompt = input + cache writes + cache reads). A list of pairs is a list of
conversations (JSON) and so is JSON Lines with one pair per line.
"""

from __future__ import annotations

from pathlib import Path
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
from contextlab.transcripts.io import counts_at
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage, Transcript

ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def looks_like(document: Any) -> bool:
    """A Messages API request/response (or pair, or list of pairs), told apart from OpenAI chat."""
    if isinstance(document, list):
        return bool(document) and all(isinstance(x, dict) and _is_pair(x) for x in document)
    if not isinstance(document, dict):
        return False
    return _is_pair(document) or _is_response(document) or _is_request(document)


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    """JSON Lines of request/response pairs."""
    return bool(rows) and isinstance(rows[0][1], dict) and _is_pair(rows[0][1])


def _is_pair(obj: dict[str, Any]) -> bool:
    return isinstance(obj.get("request"), dict) and (
        _is_request(obj["request"]) or isinstance(obj["request"].get("messages"), list)
    )


def _is_response(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "message" and obj.get("role") == "assistant" and isinstance(obj.get("content"), list)


def _is_request(obj: dict[str, Any]) -> bool:
    messages = obj.get("messages")
    if not isinstance(messages, list):
        return False
    if "system" in obj and not any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
        return True
    tools = obj.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"] in ANTHROPIC_BLOCKS for b in content
        ):
            return True
    return False


def load(path: Path, document: Any) -> list[Transcript]:
    """Every conversation of a JSON document."""
    stem = path.name.split(".")[0]
    if isinstance(document, list):
        return [_pair(path, obj, f"{stem}#{i}", f"pair {i}") for i, obj in enumerate(document)]
    if _is_pair(document):
        return [_pair(path, document, stem, None)]
    if _is_response(document):
        return [_build(path, stem, None, None, document, None)]
    return [_build(path, stem, None, document, None, None)]


def load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    """JSON Lines: one request/response pair per line."""
    stem = path.name.split(".")[0]
    out = []
    for number, obj in rows:
        if not isinstance(obj, dict) or not _is_pair(obj):
            raise TranscriptError(str(path), f"line {number}", "expected an object with 'request' (and 'response')")
        out.append(_pair(path, obj, f"{stem}#{number}", f"line {number}"))
    return out


def _pair(path: Path, obj: dict[str, Any], transcript_id: str, where: str | None) -> Transcript:
    response = obj.get("response")
    if response is not None and not isinstance(response, dict):
        raise TranscriptError(str(path), where, f"field 'response': expected an object, got {type(response).__name__}")
    return _build(path, transcript_id, where, obj["request"], response, obj)


def _build(
    path: Path,
    transcript_id: str,
    where: str | None,
    request: dict[str, Any] | None,
    response: dict[str, Any] | None,
    pair: dict[str, Any] | None,
) -> Transcript:
    source = str(path)
    log = ImportLog(source)
    prefix = f"{where}, " if where else ""
    messages: list[Message] = []
    usage: dict[int, RecordedUsage] = {}
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = []
    model: str | None = None
    if request is not None:
        system_prompt = system_text(request.get("system"), source, f"{prefix}field 'system'")
        tools = anthropic_tools(request.get("tools"), source, f"{prefix}field 'tools'")
        model = request.get("model") if isinstance(request.get("model"), str) else None
        raw_messages = request.get("messages")
        if not isinstance(raw_messages, list):
            raise TranscriptError(source, f"{prefix}field 'messages'", "expected a list of messages")
        for i, raw in enumerate(raw_messages):
            messages.extend(_message(raw, source, f"{prefix}message {i}", log))
    if response is not None:
        if response.get("role") != "assistant" or "content" not in response:
            raise TranscriptError(source, f"{prefix}field 'response'", "expected an assistant message with 'content'")
        draft = AssistantDraft()
        draft.add(response["content"], source, f"{prefix}response", log)
        messages.append(draft.message())
        with counts_at(source, f"{prefix}response"):
            recorded = usage_from_anthropic(response.get("usage"))
        if recorded is not None:
            usage[len(messages) - 1] = recorded
        model = model or (response.get("model") if isinstance(response.get("model"), str) else None)
    metadata: dict[str, Any] = {}
    if response is not None:
        metadata["stop_reason"] = response.get("stop_reason")
        metadata["response_id"] = response.get("id")
    if pair is not None:
        metadata.update({k: v for k, v in pair.items() if k not in ("request", "response")})
    return Transcript(
        transcript_id=transcript_id,
        messages=messages,
        system_prompt=system_prompt,
        tools=tools,
        usage=usage,
        source=source,
        source_format="anthropic",
        model=model,
        metadata=log.into(metadata),
    )


def _message(raw: Any, source: str, where: str, log: ImportLog) -> list[Message]:
    if not isinstance(raw, dict):
        raise TranscriptError(source, where, f"expected a message object, got {type(raw).__name__}")
    role = raw.get("role")
    if role == "assistant":
        draft = AssistantDraft()
        draft.add(raw.get("content"), source, where, log)
        return [draft.message()]
    if role == "user":
        tools, user = user_messages(raw.get("content"), source, where, log)
        return [*tools, *([user] if user is not None else [])]
    raise TranscriptError(source, where, f"field 'role': unknown role {role!r} (expected 'user' or 'assistant')")
