"""ShareGPT-style ``conversations`` (``from``/``value`` turns), as Hermes Agent saves trajectories.

Roles: ``system``, ``human``/``user``, ``gpt``/``assistant``, ``tool``/``function``/``observation``.
In assistant turns, ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` blocks become
``tool_calls`` and ``<think>...</think>`` becomes ``reasoning_content``; a tool turn holds one
``<tool_response>`` block per call, each becoming a ``tool`` message. Hermes writes the calls without
ids and often puts the provider's id inside the response, the same one every time (``qwen_tc_0``): a
call keeps its id only when it is present and unique in the conversation (else it gets the host's
deterministic id), and a response answers the open call carrying its id only when that id is unique
among the open calls; otherwise responses pair with calls by position (the first open call of the
same name, else the first open call). Tool schemas listed
in the system prompt's ``<tools>...</tools>`` block become :attr:`Transcript.tools` (and leave the
prompt, so they are not counted twice). A file is one object, a list of objects, or JSON Lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.messages import deterministic_tool_call_id
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import Transcript

ROLE_OF = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
    "observation": "tool",
}
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
TOOL_RESPONSE = re.compile(r"<tool_response>\s*(.*?)\s*</tool_response>", re.DOTALL)
THINK = re.compile(r"<think>\s*(.*?)\s*</think>", re.DOTALL)
TOOLS_BLOCK = re.compile(r"<tools>\s*(.*?)\s*</tools>", re.DOTALL)


def looks_like(document: Any) -> bool:
    """An object with a ``conversations`` list, or a non-empty list of such objects."""
    if isinstance(document, list):
        return bool(document) and all(_is_conversation(x) for x in document)
    return _is_conversation(document)


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    """JSON Lines of ShareGPT objects."""
    return bool(rows) and _is_conversation(rows[0][1])


def _is_conversation(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("conversations"), list)


def load(path: Path, document: Any) -> list[Transcript]:
    """A JSON document: one conversation object or a list of them."""
    items = document if isinstance(document, list) else [document]
    stem = path.name.split(".")[0]
    single = len(items) == 1
    return [
        _conversation(path, obj, stem if single else f"{stem}#{i}", f"conversation {i}, ")
        for i, obj in enumerate(items)
    ]


def load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    """JSON Lines: one conversation object per line."""
    stem = path.name.split(".")[0]
    out = []
    for number, obj in rows:
        if not _is_conversation(obj):
            raise TranscriptError(str(path), f"line {number}", "expected an object with a 'conversations' list")
        out.append(_conversation(path, obj, f"{stem}#{number}", f"line {number}, "))
    return out


def _conversation(path: Path, obj: dict[str, Any], transcript_id: str, where: str) -> Transcript:
    source = str(path)
    log = ImportLog(source)
    messages: list[Message] = []
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = []
    open_calls: list[dict[str, Any]] = []  # calls of the latest assistant turn not yet answered
    seen_ids: set[str] = set()  # call ids used so far: ids must be unique in a conversation
    for i, turn in enumerate(obj["conversations"]):
        at = f"{where}turn {i}"
        if not isinstance(turn, dict):
            raise TranscriptError(
                source, at, f"expected a turn object with 'from' and 'value', got {type(turn).__name__}"
            )
        sender, value = turn.get("from"), turn.get("value")
        if not isinstance(sender, str) or sender not in ROLE_OF:
            raise TranscriptError(
                source, at, f"field 'from': unknown sender {sender!r} (expected one of {sorted(ROLE_OF)})"
            )
        if not isinstance(value, str):
            raise TranscriptError(source, at, f"field 'value': expected a string, got {type(value).__name__}")
        role = ROLE_OF[sender]
        if role == "system":
            if system_prompt is None and not messages:
                system_prompt, tools = _system(value, source, at, log)
            else:
                messages.append({"role": "system", "content": value})
        elif role == "user":
            messages.append({"role": "user", "content": value})
        elif role == "assistant":
            message = _assistant(value, len(messages), seen_ids, at, log)
            open_calls = list(message.get("tool_calls") or [])
            messages.append(message)
        else:
            replies = _tool_messages(value, open_calls, source, at, log)
            messages.extend(replies)
    if not messages:
        raise TranscriptError(source, where.rstrip(", ") or None, "field 'conversations': no turns")
    metadata = {k: v for k, v in obj.items() if k != "conversations"}
    if tools:
        metadata["tools_from_system_prompt"] = True
    else:
        tools = _listed_tools(obj.get("tools"))
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    return Transcript(
        transcript_id=str(obj.get("id") or transcript_id),
        messages=messages,
        system_prompt=system_prompt,
        tools=tools,
        source=source,
        source_format="sharegpt",
        model=model,
        metadata=log.into(metadata),
    )


def _listed_tools(value: Any) -> list[dict[str, Any]]:
    """Tool schemas from the trajectory's own ``tools`` field (Hermes stores it as JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if not isinstance(value, list) or not all(isinstance(s, dict) for s in value):
        return []
    return [
        s if s.get("type") == "function" and "function" in s else {"type": "function", "function": s} for s in value
    ]


def _system(value: str, source: str, where: str, log: ImportLog) -> tuple[str, list[dict[str, Any]]]:
    # Hermes prompts mention "<tools> </tools> XML tags" before the real block: take the first non-empty.
    found = next((m for m in TOOLS_BLOCK.finditer(value) if m.group(1).strip()), None)
    if found is None:
        return value, []
    try:
        schemas = json.loads(found.group(1))
    except ValueError:
        # Some prompts list one JSON object per line inside <tools>.
        try:
            schemas = [json.loads(line) for line in found.group(1).splitlines() if line.strip()]
        except ValueError:
            log.warn(where, "<tools> block is not JSON; left in the system prompt")
            return value, []
    if isinstance(schemas, dict):
        schemas = [schemas]
    if not isinstance(schemas, list) or not all(isinstance(s, dict) for s in schemas):
        log.warn(where, "<tools> block is not a list of schemas; left in the system prompt")
        return value, []
    tools = [
        s if s.get("type") == "function" and "function" in s else {"type": "function", "function": s} for s in schemas
    ]
    prompt = (value[: found.start()] + "<tools>\n</tools>" + value[found.end() :]).strip()
    return prompt, tools


def _assistant(value: str, index: int, seen_ids: set[str], where: str, log: ImportLog) -> Message:
    calls: list[dict[str, Any]] = []
    for k, block in enumerate(TOOL_CALL.findall(value)):
        try:
            parsed = json.loads(block)
        except ValueError:
            log.warn(f"{where}, tool_call {k}", "not valid JSON; the text stays in the assistant content")
            continue
        if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
            log.warn(f"{where}, tool_call {k}", "expected an object with a 'name'; the text stays in the content")
            continue
        arguments = parsed.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        call_id = parsed.get("id") if isinstance(parsed.get("id"), str) and parsed.get("id") else None
        if call_id is None or call_id in seen_ids:
            call_id = deterministic_tool_call_id(parsed["name"], text, index * 100 + k)
        seen_ids.add(call_id)
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": parsed["name"], "arguments": text},
            }
        )
    rest = value
    thinking = THINK.findall(rest)
    rest = THINK.sub("", rest)
    if calls:
        rest = TOOL_CALL.sub(lambda m: "" if _parses(m.group(1)) else m.group(0), rest)
    message: Message = {"role": "assistant", "content": rest.strip() or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["reasoning_content"] = "\n".join(thinking)
    return message


def _parses(block: str) -> bool:
    try:
        parsed = json.loads(block)
    except ValueError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("name"), str)


def _tool_messages(
    value: str, open_calls: list[dict[str, Any]], source: str, where: str, log: ImportLog
) -> list[Message]:
    blocks = TOOL_RESPONSE.findall(value) or [value]
    out: list[Message] = []
    for k, block in enumerate(blocks):
        content: Any = block
        named: str | None = None
        claimed: str | None = None
        try:
            parsed = json.loads(block)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            claimed = parsed.get("tool_call_id") if isinstance(parsed.get("tool_call_id"), str) else None
            named = parsed.get("name") if isinstance(parsed.get("name"), str) else None
            if "content" in parsed:
                inner = parsed["content"]
                content = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        call_id = _answered_call(open_calls, claimed, named)
        if call_id is None:
            log.warn(f"{where}, tool_response {k}", "no tool call to answer; kept with an orphan id")
            call_id = f"orphan_{k}"
        open_calls[:] = [c for c in open_calls if c["id"] != call_id]
        out.append({"role": "tool", "tool_call_id": call_id, "content": content})
    return out


def _answered_call(open_calls: list[dict[str, Any]], claimed: str | None, named: str | None) -> str | None:
    """The open call a response answers: by its id when that id is unique among the open calls,
    else by position (the first open call of the same name, else the first open call)."""
    if claimed is not None and sum(1 for c in open_calls if c["id"] == claimed) == 1:
        return claimed
    if named is not None:
        same_name = next((c["id"] for c in open_calls if c["function"]["name"] == named), None)
        if same_name is not None:
            return str(same_name)
    return str(open_calls[0]["id"]) if open_calls else None
