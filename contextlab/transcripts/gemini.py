"""Gemini CLI chat sessions and Gemini API ``contents`` lists.

A Gemini CLI session (``~/.gemini/tmp/<project>/chats/session-*.json``) is ``{sessionId,
projectHash, startTime, lastUpdated, messages}``; a message has ``type`` ``user``, ``gemini``,
``info``, ``error`` or ``warning``, ``content`` (text or parts), and for ``gemini`` messages
``toolCalls`` (``id``, ``name``, ``args``, ``result`` = the ``functionResponse`` parts sent back),
``thoughts`` and ``tokens`` (``input``, ``output``, ``cached``, ``thoughts``, ``tool``, ``total``).
A model message becomes an assistant message with ``tool_calls``, each followed by its ``tool``
result; ``tokens`` is the request's usage, recorded in the Gemini API shape (``promptTokenCount``,
``cachedContentTokenCount``, ...). ``info``/``error``/``warning`` lines are display-only.

A ``contents`` list (``/chat save`` checkpoints, API logs) is ``[{role: user|model, parts}]`` with
``text``, ``functionCall`` and ``functionResponse`` parts; calls without ids pair with responses by
position.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.messages import deterministic_tool_call_id
from contextlab.transcripts.io import token_count
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage, Transcript
from contextlab.transcripts.per_request import parse_time

SESSION_TYPES = ("user", "gemini", "info", "error", "warning")  # a tuple: values may be unhashable


def looks_like(document: Any) -> bool:
    if isinstance(document, dict):
        messages = document.get("messages")
        return (
            isinstance(messages, list)
            and ("sessionId" in document or "projectHash" in document)
            and all(isinstance(m, dict) and m.get("type") in SESSION_TYPES for m in messages[:3])
        )
    return _is_contents(document)


def _is_contents(document: Any) -> bool:
    # Recognised by shape, not validity: items carry `parts` where OpenAI messages carry `content`.
    # A corrupted item among the first few still makes it a contents list, so the loader names it.
    if not (isinstance(document, list) and document and all(isinstance(c, dict) for c in document[:3])):
        return False
    head = document[:3]
    return any("parts" in c for c in head) and not any("content" in c for c in head)


def load(path: Path, document: Any) -> list[Transcript]:
    if isinstance(document, list):
        return [_contents(path, document)]
    return [_session(path, document)]


def _session(path: Path, document: dict[str, Any]) -> Transcript:
    source = str(path)
    log = ImportLog(source)
    messages: list[Message] = []
    usage: dict[int, RecordedUsage] = {}
    timestamps: dict[int, float] = {}
    skipped: Counter[str] = Counter()
    model: str | None = None
    for i, raw in enumerate(document["messages"]):
        where = f"message {i}"
        if not isinstance(raw, dict):
            raise TranscriptError(source, where, f"expected a message object, got {type(raw).__name__}")
        kind = raw.get("type")
        stamp = parse_time(raw.get("timestamp"))
        if kind not in ("user", "gemini"):
            skipped[str(kind)] += 1
            continue
        text = _text(raw.get("content"), source, where)
        if stamp is not None:
            timestamps[len(messages)] = stamp
        if kind == "user":
            messages.append({"role": "user", "content": text})
            continue
        message: Message = {"role": "assistant", "content": text}
        thoughts = [t for t in raw.get("thoughts") or [] if isinstance(t, dict)]
        if thoughts:
            message["reasoning_content"] = "\n".join(
                f"{t.get('subject', '')}: {t.get('description', '')}".strip(": ") for t in thoughts
            )
        results: list[Message] = []
        calls = []
        for k, call in enumerate(raw.get("toolCalls") or []):
            at = f"{where}, toolCalls[{k}]"
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise TranscriptError(source, at, "expected a tool call with a string 'name'")
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
            call_id = call_id or deterministic_tool_call_id(call["name"], arguments, len(messages) * 100 + k)
            calls.append(
                {"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": arguments}}
            )
            results.append({"role": "tool", "tool_call_id": call_id, "content": _result_text(call.get("result"))})
        if calls:
            message["tool_calls"] = calls
            if not text:
                message["content"] = None
        messages.append(message)
        tokens = raw.get("tokens")
        if isinstance(tokens, dict):
            usage[len(messages) - 1] = _usage(tokens, source, where)
        if isinstance(raw.get("model"), str):
            model = raw["model"]
        messages.extend(results)
    if not messages:
        raise TranscriptError(source, "field 'messages'", "no user or gemini messages")
    metadata: dict[str, Any] = {k: document[k] for k in ("projectHash", "startTime", "lastUpdated") if k in document}
    if skipped:
        metadata["skipped_messages"] = dict(sorted(skipped.items()))
    return Transcript(
        transcript_id=str(document.get("sessionId") or path.name.split(".")[0]),
        messages=messages,
        usage=usage,
        timestamps=timestamps,
        source=source,
        source_format="gemini-cli",
        model=model,
        metadata=log.into(metadata),
    )


def _text(content: Any, source: str, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return "\n".join(
            p if isinstance(p, str) else str(p.get("text"))
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        )
    raise TranscriptError(source, where, f"field 'content': expected text or parts, got {type(content).__name__}")


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    texts = []
    for part in result if isinstance(result, list) else [result]:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"].get("response")
            if isinstance(response, dict) and isinstance(response.get("output"), str):
                texts.append(response["output"])
            else:
                texts.append(json.dumps(response, ensure_ascii=False))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def _usage(tokens: dict[str, Any], source: str, where: str) -> RecordedUsage:
    try:
        prompt = token_count(tokens.get("input"), "tokens.input")
        cached = token_count(tokens.get("cached"), "tokens.cached")
        output = token_count(tokens.get("output"), "tokens.output")
        thoughts = token_count(tokens.get("thoughts"), "tokens.thoughts")
        tool = token_count(tokens.get("tool"), "tokens.tool")
    except ValueError as error:
        raise TranscriptError(source, where, str(error)) from None
    raw = {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": output,
        "thoughtsTokenCount": thoughts,
        "toolUsePromptTokenCount": tool,
        "totalTokenCount": prompt + output + thoughts + tool,
    }
    return RecordedUsage(prompt, output + thoughts, cache_read_tokens=cached, reasoning_tokens=thoughts, raw=raw)


def _contents(path: Path, contents: list[Any]) -> Transcript:
    source = str(path)
    messages: list[Message] = []
    open_calls: list[str] = []
    for i, content in enumerate(contents):
        where = f"content {i}"
        if not isinstance(content, dict):
            raise TranscriptError(source, where, "expected {role: user|model, parts: [...]}")
        if content.get("role") not in ("user", "model"):
            raise TranscriptError(source, where, f"field 'role': expected user or model, got {content.get('role')!r}")
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise TranscriptError(source, where, "field 'parts': expected a list")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        replies: list[Message] = []
        for k, part in enumerate(parts):
            if not isinstance(part, dict):
                raise TranscriptError(source, f"{where}, part {k}", "expected a part object")
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part.get("functionCall"), dict):
                fc = part["functionCall"]
                name = str(fc.get("name") or "")
                arguments = json.dumps(fc.get("args") or {}, ensure_ascii=False)
                call_id = str(fc.get("id") or "") or deterministic_tool_call_id(name, arguments, i * 100 + k)
                calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
            elif isinstance(part.get("functionResponse"), dict):
                fr = part["functionResponse"]
                claimed = str(fr.get("id") or "")
                call_id = claimed if claimed in open_calls else (open_calls[0] if open_calls else f"orphan_{i}_{k}")
                if call_id in open_calls:
                    open_calls.remove(call_id)
                replies.append({"role": "tool", "tool_call_id": call_id, "content": _result_text([part])})
        if content["role"] == "model":
            message: Message = {"role": "assistant", "content": "\n".join(texts) or (None if calls else "")}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            open_calls = [c["id"] for c in calls]
        else:
            messages.extend(replies)
            if texts:
                messages.append({"role": "user", "content": "\n".join(texts)})
    if not messages:
        raise TranscriptError(source, None, "no messages in the contents list")
    return Transcript(
        transcript_id=path.name.split(".")[0],
        messages=messages,
        source=source,
        source_format="gemini-contents",
    )
