"""Anthropic Messages API content blocks mapped to OpenAI chat messages.

Shared by the Claude Code session importer and the Messages API request/response importer.
Mapping: ``text`` -> content, ``thinking`` -> ``reasoning_content`` (kept apart: the exact
counter does not bill it as content), ``tool_use`` -> ``tool_calls``, ``tool_result`` -> a
``tool`` message, ``image`` -> an ``image_url`` part. Blocks of other types are kept in the
persistence-only ``display_metadata`` field and reported, never dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.io import token_count
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage

USER_PART_TYPES = frozenset({"text", "image", "document"})


@dataclass
class AssistantDraft:
    """The blocks of one assistant response, accumulated over one or more log lines."""

    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    redacted_thinking: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    other_blocks: list[dict[str, Any]] = field(default_factory=list)

    def add(self, content: Any, source: str, where: str, log: ImportLog) -> None:
        """Append the blocks of one ``content`` value (a string or a block list)."""
        if isinstance(content, str):
            self.texts.append(content)
            return
        if not isinstance(content, list):
            raise TranscriptError(
                source,
                where,
                f"field 'content': expected a string or a list of blocks, got {type(content).__name__}",
            )
        for j, block in enumerate(content):
            if not isinstance(block, dict):
                raise TranscriptError(
                    source,
                    f"{where}, block {j}",
                    f"expected a content block object, got {type(block).__name__}",
                )
            kind = block.get("type")
            if kind == "text":
                self.texts.append(_string(block, "text", source, f"{where}, block {j}"))
            elif kind == "thinking":
                self.thinking.append(str(block.get("thinking") or ""))
            elif kind == "redacted_thinking":
                self.redacted_thinking += 1
            elif kind == "tool_use":
                self.calls.append(tool_call(block, source, f"{where}, block {j}"))
            else:
                log.warn(f"{where}, block {j}", f"unknown assistant block type {kind!r} kept in display_metadata")
                self.other_blocks.append(block)

    def message(self) -> Message:
        """The OpenAI assistant message: text parts joined only when there is exactly one."""
        message: Message = {"role": "assistant", "content": _text_content(self.texts)}
        if self.calls:
            message["tool_calls"] = list(self.calls)
        if self.thinking:
            message["reasoning_content"] = "\n".join(self.thinking)
        extra: dict[str, Any] = {}
        if self.redacted_thinking:
            extra["redacted_thinking_blocks"] = self.redacted_thinking
        if self.other_blocks:
            extra["unmapped_blocks"] = list(self.other_blocks)
        if extra:
            message["display_metadata"] = extra
        return message


def tool_call(block: dict[str, Any], source: str, where: str) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry from a ``tool_use`` block (arguments as JSON text)."""
    call_id = block.get("id")
    name = block.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise TranscriptError(source, where, "tool_use block: field 'id' must be a non-empty string")
    if not isinstance(name, str):
        raise TranscriptError(source, where, "tool_use block: field 'name' must be a string")
    arguments = block.get("input", {})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def user_messages(content: Any, source: str, where: str, log: ImportLog) -> tuple[list[Message], Message | None]:
    """The ``tool`` messages and the user message (None when only tool results) of one user content.

    Tool results come first, as the Messages API requires them at the start of a user message.
    """
    if isinstance(content, str):
        return [], {"role": "user", "content": content}
    if not isinstance(content, list):
        raise TranscriptError(
            source,
            where,
            f"field 'content': expected a string or a list of blocks, got {type(content).__name__}",
        )
    tools: list[Message] = []
    parts: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        at = f"{where}, block {j}"
        if not isinstance(block, dict):
            raise TranscriptError(source, at, f"expected a content block object, got {type(block).__name__}")
        kind = block.get("type")
        if kind == "tool_result":
            tools.append(tool_message(block, source, at, log))
        elif isinstance(kind, str) and kind in USER_PART_TYPES:
            parts.append(_part(block, source, at, log))
        else:
            log.warn(at, f"unknown user block type {kind!r} kept in display_metadata")
            others.append(block)
    if not parts and not others:
        return tools, None
    user: Message = {"role": "user", "content": _parts_content(parts)}
    if others:
        user["display_metadata"] = {"unmapped_blocks": others}
    return tools, user


def tool_message(block: dict[str, Any], source: str, where: str, log: ImportLog) -> Message:
    """A ``tool`` message from a ``tool_result`` block (an error flag goes to ``display_metadata``)."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise TranscriptError(source, where, "tool_result block: field 'tool_use_id' must be a non-empty string")
    raw = block.get("content", "")
    if raw is None:
        content: Any = ""
    elif isinstance(raw, str):
        content = raw
    elif isinstance(raw, list):
        parts = []
        for k, part in enumerate(raw):
            if not isinstance(part, dict):
                raise TranscriptError(
                    source,
                    f"{where}, part {k}",
                    f"expected a content block object, got {type(part).__name__}",
                )
            parts.append(_part(part, source, f"{where}, part {k}", log))
        content = _parts_content(parts)
    else:
        raise TranscriptError(
            source, where, f"tool_result content: expected a string or a list, got {type(raw).__name__}"
        )
    message: Message = {"role": "tool", "tool_call_id": call_id, "content": content}
    if block.get("is_error"):
        message["display_metadata"] = {"is_error": True}
    return message


def usage_from_anthropic(usage: Any) -> RecordedUsage | None:
    """Anthropic ``usage``: the prompt is uncached input plus cache writes plus cache reads.

    Raises:
        BadNumber: a count is ``NaN``, ``Infinity``, negative or not a number.
    """
    if not isinstance(usage, dict):
        return None
    uncached = token_count(usage.get("input_tokens"), "usage.input_tokens")
    write = token_count(usage.get("cache_creation_input_tokens"), "usage.cache_creation_input_tokens")
    read = token_count(usage.get("cache_read_input_tokens"), "usage.cache_read_input_tokens")
    output = token_count(usage.get("output_tokens"), "usage.output_tokens")
    return RecordedUsage(
        prompt_tokens=uncached + write + read,
        completion_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=write,
        raw=dict(usage),
    )


def _part(block: dict[str, Any], source: str, where: str, log: ImportLog) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": _string(block, "text", source, where)}
    if kind == "image":
        src = block.get("source")
        if isinstance(src, dict) and src.get("type") == "base64":
            url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
            return {"type": "image_url", "image_url": {"url": url}}
        if isinstance(src, dict) and src.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": str(src.get("url", ""))}}
    # Documents and unusual image sources have no OpenAI equivalent: kept verbatim as a part.
    log.warn(where, f"{kind!r} block kept verbatim (no OpenAI equivalent)")
    return dict(block)


def _string(block: dict[str, Any], key: str, source: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise TranscriptError(source, where, f"{block.get('type')} block: field {key!r} must be a string")
    return value


def _text_content(texts: list[str]) -> Any:
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def _parts_content(parts: list[dict[str, Any]]) -> Any:
    # One text part becomes a plain string; several parts stay a list (part boundaries are kept).
    if len(parts) == 1 and parts[0].get("type") == "text":
        return parts[0]["text"]
    return parts


def system_text(value: Any, source: str, where: str) -> str | None:
    """An Anthropic ``system`` field (a string or a list of text blocks) as one string."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for j, block in enumerate(value):
            if not isinstance(block, dict) or not isinstance(block.get("text"), str):
                raise TranscriptError(source, f"{where}[{j}]", "expected a text block with a string 'text'")
            texts.append(block["text"])
        return "\n\n".join(texts)
    raise TranscriptError(source, where, f"expected a string or a list of text blocks, got {type(value).__name__}")


def anthropic_tools(value: Any, source: str, where: str) -> list[dict[str, Any]]:
    """Anthropic tool definitions (``name``, ``input_schema``) as OpenAI function tools."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TranscriptError(source, where, f"expected a list, got {type(value).__name__}")
    out = []
    for j, tool in enumerate(value):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise TranscriptError(source, f"{where}[{j}]", "expected a tool object with a string 'name'")
        function: dict[str, Any] = {"name": tool["name"]}
        if "description" in tool:
            function["description"] = tool["description"]
        function["parameters"] = tool.get("input_schema", {"type": "object", "properties": {}})
        out.append({"type": "function", "function": function})
    return out
