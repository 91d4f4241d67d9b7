"""OpenAI chat transcripts: JSON (a message list, or an object with ``messages``) and JSON Lines
(one message per line, or one conversation per line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.messages import ROLES, deterministic_tool_call_id
from contextlab.transcripts.io import counts_at, token_count
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage, Transcript
from contextlab.transcripts.per_request import Step, is_growing, rebuild

_ROLE_ALIASES = {"developer": "system"}


def upgrade_legacy_functions(raw: list[Any]) -> list[Any]:
    """OpenAI's legacy function calling in today's form: an assistant ``function_call`` becomes a
    one-entry ``tool_calls`` (with the host's deterministic id, the legacy API had none) and the
    ``function`` message answering it a ``tool`` message carrying that id."""
    if not any(isinstance(m, dict) and (m.get("role") == "function" or "function_call" in m) for m in raw):
        return raw
    out: list[Any] = []
    open_id: str | None = None
    for i, message in enumerate(raw):
        if not isinstance(message, dict):
            out.append(message)
            continue
        call = message.get("function_call")
        if message.get("role") == "assistant" and isinstance(call, dict) and isinstance(call.get("name"), str):
            arguments = call.get("arguments", "")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            open_id = deterministic_tool_call_id(call["name"], text, i)
            upgraded = {k: v for k, v in message.items() if k != "function_call"}
            upgraded["tool_calls"] = [
                {"id": open_id, "type": "function", "function": {"name": call["name"], "arguments": text}}
            ]
            out.append(upgraded)
        elif message.get("role") == "function":
            upgraded = {k: v for k, v in message.items() if k != "role"}
            upgraded["role"] = "tool"
            upgraded["tool_call_id"] = open_id or deterministic_tool_call_id(str(message.get("name", "")), "", i)
            open_id = None
            out.append(upgraded)
        else:
            out.append(message)
    return out


def check_message(value: Any, source: str, where: str) -> Message:
    """Validate the shape of one OpenAI message and return it (roles normalized)."""
    if not isinstance(value, dict):
        raise TranscriptError(source, where, f"expected a message object, got {type(value).__name__}")
    role = value.get("role")
    if not isinstance(role, str):
        raise TranscriptError(source, where, "field 'role': expected a string")
    role = _ROLE_ALIASES.get(role, role)
    if role not in ROLES:
        raise TranscriptError(source, where, f"field 'role': unknown role {role!r} (expected one of {sorted(ROLES)})")
    content = value.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise TranscriptError(
            source, where, f"field 'content': expected a string, a list or null, got {type(content).__name__}"
        )
    calls = value.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise TranscriptError(source, where, "field 'tool_calls': expected a list")
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
                raise TranscriptError(source, where, f"field 'tool_calls[{j}]': expected an object with 'function'")
            function = call["function"]
            if not isinstance(function.get("name"), str):
                raise TranscriptError(source, where, f"field 'tool_calls[{j}].function.name': expected a string")
            if not isinstance(function.get("arguments", ""), (str, dict)):
                raise TranscriptError(
                    source,
                    where,
                    f"field 'tool_calls[{j}].function.arguments': expected a JSON string or an object",
                )
            if call.get("id") is not None and not isinstance(call.get("id"), str):
                raise TranscriptError(source, where, f"field 'tool_calls[{j}].id': expected a string")
    if role == "tool" and not isinstance(value.get("tool_call_id"), str):
        raise TranscriptError(source, where, "field 'tool_call_id': a tool message needs a string id")
    message = dict(value)
    message["role"] = role
    if calls is None:
        message.pop("tool_calls", None)
    return message


def transcript_from_messages(
    raw: list[Any],
    source: str,
    transcript_id: str,
    *,
    where_prefix: str = "message",
    tools: list[dict[str, Any]] | None = None,
    source_format: str = "openai",
    metadata: dict[str, Any] | None = None,
) -> Transcript:
    """Build a :class:`Transcript` from a message list, lifting the leading system message out."""
    if not raw:
        raise TranscriptError(source, where_prefix.rsplit(",", 1)[0] if "," in where_prefix else None, "no messages")
    raw = upgrade_legacy_functions(raw)
    messages = [check_message(m, source, f"{where_prefix} {i}") for i, m in enumerate(raw)]
    system_prompt = None
    if messages and messages[0]["role"] == "system":
        system_prompt = messages.pop(0).get("content")
        if not isinstance(system_prompt, str):
            system_prompt = None
    usage: dict[int, RecordedUsage] = {}
    for i, message in enumerate(messages):
        recorded = message.pop("usage", None)
        if message["role"] == "assistant" and isinstance(recorded, dict):
            with counts_at(source, f"{where_prefix} {i}"):
                usage[i] = usage_from_openai(recorded)
    return Transcript(
        transcript_id=transcript_id,
        messages=messages,
        system_prompt=system_prompt,
        tools=list(tools or []),
        usage=usage,
        source=source,
        source_format=source_format,
        metadata=dict(metadata or {}),
    )


def usage_from_openai(usage: dict[str, Any]) -> RecordedUsage:
    """An OpenAI chat ``usage`` object (cached tokens inside ``prompt_tokens_details``).

    Raises:
        BadNumber: a count is ``NaN``, ``Infinity``, negative or not a number.
    """
    details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return RecordedUsage(
        prompt_tokens=token_count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        completion_tokens=token_count(usage.get("completion_tokens"), "usage.completion_tokens"),
        cache_read_tokens=token_count(
            details.get("cached_tokens") if isinstance(details, dict) else None,
            "usage.prompt_tokens_details.cached_tokens",
        ),
        reasoning_tokens=token_count(
            completion_details.get("reasoning_tokens") if isinstance(completion_details, dict) else None,
            "usage.completion_tokens_details.reasoning_tokens",
        ),
        raw=dict(usage),
    )


def looks_like(document: Any) -> bool:
    """A message list, an object with ``messages``, one message, or a list of conversations."""
    if isinstance(document, dict):
        return "messages" in document or isinstance(document.get("role"), str)
    if isinstance(document, list):
        # Close enough for the OpenAI loader to name the bad field precisely.
        return bool(document) and all(
            isinstance(x, dict) and bool(x.keys() & {"messages", "role", "content", "tool_calls"}) for x in document[:3]
        )
    return False


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    """Messages one a line, or conversations (lists or objects with ``messages``) one a line."""
    first = rows[0][1]
    return isinstance(first, list) or looks_like(first)


def load_json(path: Path, document: Any) -> list[Transcript]:
    """A JSON document: a list of messages, an object with ``messages``, or a list of such objects."""
    source = str(path)
    stem = path.name.split(".")[0]
    if isinstance(document, dict):
        if "messages" not in document and isinstance(document.get("role"), str):
            return [transcript_from_messages([document], source, stem)]  # one-line JSON Lines
        return [_from_object(document, source, stem, "")]
    if isinstance(document, list):
        if all(isinstance(x, dict) and "messages" in x for x in document) and document:
            return [_from_object(obj, source, f"{stem}#{i}", f"conversation {i}, ") for i, obj in enumerate(document)]
        return [transcript_from_messages(document, source, stem)]
    raise TranscriptError(
        source,
        None,
        f"expected a JSON list of messages or an object with 'messages', got {type(document).__name__}",
    )


def _from_object(obj: dict[str, Any], source: str, transcript_id: str, where: str) -> Transcript:
    messages = obj.get("messages")
    if not isinstance(messages, list):
        raise TranscriptError(source, where.rstrip(", ") or None, "field 'messages': expected a list of messages")
    tools = obj.get("tools") or []
    if not isinstance(tools, list):
        raise TranscriptError(source, where.rstrip(", ") or None, "field 'tools': expected a list")
    return transcript_from_messages(
        messages,
        source,
        str(obj.get("id") or transcript_id),
        where_prefix=f"{where}message",
        tools=tools,
        metadata={k: v for k, v in obj.items() if k not in ("messages", "tools")},
    )


def _growing(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    """A log whose every line is the full message list of one request (its response last)."""
    source = str(path)
    log = ImportLog(source)
    steps = []
    for number, value in rows:
        where = f"line {number}"
        obj = value if isinstance(value, dict) else {"messages": value}
        raw = obj.get("messages")
        if not isinstance(raw, list):
            raise TranscriptError(source, where, "expected a conversation (a list or an object with 'messages')")
        checked = [
            check_message(m, source, f"{where}, message {i}") for i, m in enumerate(upgrade_legacy_functions(raw))
        ]
        system = None
        if checked and checked[0]["role"] == "system" and isinstance(checked[0].get("content"), str):
            system = checked.pop(0)["content"]
        recorded = obj.get("usage")
        for message in checked:
            inner = message.pop("usage", None)  # usage belongs to the response, not the message
            if message is checked[-1] and isinstance(inner, dict):
                recorded = inner
        response = checked.pop() if checked and checked[-1]["role"] == "assistant" else None
        with counts_at(source, where):
            usage = usage_from_openai(recorded) if isinstance(recorded, dict) and response is not None else None
        tools = [t for t in obj.get("tools") or [] if isinstance(t, dict)] if isinstance(obj.get("tools"), list) else []
        model = obj.get("model") if isinstance(obj.get("model"), str) else None
        steps.append(Step(checked, response, usage, system, tools, model, None, where, "openai"))
    return rebuild(steps, source, path.name.split(".")[0], "openai", log, {})


def load_jsonl(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    """JSON Lines: one message per line, or one conversation (list or object) per line."""
    source = str(path)
    stem = path.name.split(".")[0]
    if not rows:
        raise TranscriptError(source, None, "empty file: expected JSON Lines with messages")
    first = rows[0][1]
    if isinstance(first, list) or (isinstance(first, dict) and "messages" in first):
        lists: list[Any] = [
            v if isinstance(v, list) else v.get("messages") if isinstance(v, dict) else [] for _, v in rows
        ]
        if is_growing(lists):
            return _growing(path, rows)
        out = []
        for number, value in rows:
            if isinstance(value, list):
                out.append(
                    transcript_from_messages(value, source, f"{stem}#{number}", where_prefix=f"line {number}, message")
                )
            elif isinstance(value, dict) and "messages" in value:
                out.append(_from_object(value, source, f"{stem}#{number}", f"line {number}, "))
            else:
                raise TranscriptError(
                    source, f"line {number}", "expected a conversation (a list or an object with 'messages')"
                )
        return out
    upgraded = upgrade_legacy_functions([value for _, value in rows])
    messages = [
        check_message(value, source, f"line {number}") for (number, _), value in zip(rows, upgraded, strict=True)
    ]
    return [transcript_from_messages(messages, source, stem)]
