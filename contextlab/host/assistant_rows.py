"""The content of the assistant row the host makes from a provider's reply.

The real host does not keep a reply's content as it came: it flattens it to one string, replaces
lone surrogates, takes out reasoning blocks and tool-call markup some models write inline, strips
the result and redacts secrets in it, before the row joins its history. A replay stands the
recorded reply in for the provider's, so the host makes its row's content the same way
(``docs/host-loop.md`` §Assistant rows). Sources, ``NousResearch/hermes-agent`` as released in PyPI
``hermes-agent`` 0.19.0: ``agent/chat_completion_helpers.py`` (``build_assistant_message``),
``agent/message_content.py`` (``flatten_message_text``), ``agent/agent_runtime_helpers.py``
(``strip_think_blocks``, the same rules @``0009407f``); redaction is :func:`contextlab.redact.redact`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from contextlab.engine import Message
from contextlab.messages import strip_surrogates
from contextlab.redact import redact

_NOT_TEXT = frozenset({"image", "image_url", "input_image", "audio", "input_audio"})
_TEXT_KEYS = ("text", "content", "input_text", "output_text", "summary_text")
_REASONING_TAGS = ("think", "thinking", "reasoning", "REASONING_SCRATCHPAD", "thought")
_CALL_TAGS = ("tool_call", "tool_calls", "tool_result", "function_call", "function_calls")
_ANY_CASE = re.DOTALL | re.IGNORECASE
_STRIPS: tuple[re.Pattern[str], ...] = (
    # Closed reasoning blocks, then closed tool-call blocks (attributes allowed on the latter).
    *(re.compile(f"<{tag}>.*?</{tag}>", _ANY_CASE) for tag in _REASONING_TAGS),
    *(re.compile(rf"<{tag}\b[^>]*>.*?</{tag}>", _ANY_CASE) for tag in _CALL_TAGS),
    # A named `<function name=...>` block at the start of a line or after end punctuation.
    re.compile(
        r"(?:(?<=^)|(?<=[\n\r.!?:]))[ \t]*<function\b[^>]*\bname\s*=[^>]*>(?:(?:(?!</function>).)*)</function>",
        _ANY_CASE,
    ),
    # An opening reasoning tag at the start of a line that is never closed: the rest goes.
    re.compile(rf"(?:^|\n)[ \t]*<(?:{'|'.join(_REASONING_TAGS)})\b[^>]*>.*$", _ANY_CASE),
    # Stray reasoning tags, then stray closing tool-call tags (with the space after them).
    re.compile(rf"</?(?:{'|'.join(_REASONING_TAGS)})>\s*", re.IGNORECASE),
    re.compile(rf"</(?:{'|'.join((*_CALL_TAGS, 'function'))})>\s*", re.IGNORECASE),
)
_TAG_OPENER = "<"


def _part_text(part: Any) -> str:
    if part is None:
        return ""
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    if str(part.get("type") or "").strip().lower() in _NOT_TEXT:
        return ""
    for key in _TEXT_KEYS:
        text = part.get(key)
        if isinstance(text, str):
            return text
    return ""


def flattened(content: Any) -> str:
    """A reply's content as one string: ``None`` is ``""``, text parts are joined by line breaks
    (images and audio left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text for text in map(_part_text, content) if text)
    text = _part_text(content)
    return text if text else str(content)


def without_inline_blocks(text: str) -> str:
    """``text`` without inline reasoning blocks and tool-call markup (upstream ``strip_think_blocks``)."""
    if _TAG_OPENER not in text:
        return text  # every rule needs a tag
    for pattern in _STRIPS:
        text = pattern.sub("", text)
    return text


def host_content(content: Any) -> str:
    """The content the host keeps of a reply's ``content``."""
    text = strip_surrogates(flattened(content))
    if text:
        text = without_inline_blocks(text).strip()
    if text:
        text = redact(text)
    return text


def _responses_item_id(call_id: str) -> str:
    """The ``response_item_id`` the host derives from a call id (a Responses ``function_call`` id
    must start with ``fc_``; upstream ``_derive_responses_function_call_id``)."""
    if call_id.startswith("fc_"):
        return call_id
    if call_id.startswith("call_") and len(call_id) > len("call_"):
        return "fc_" + call_id[len("call_") :]
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "", call_id)
    if cleaned.startswith("fc_"):
        return cleaned
    if cleaned.startswith("call_") and len(cleaned) > len("call_"):
        return "fc_" + cleaned[len("call_") :]
    if cleaned:
        return "fc_" + cleaned[:48]
    return "fc_" + hashlib.sha1(call_id.encode("utf-8")).hexdigest()[:24]


def host_tool_call(call: Any) -> Any:
    """A recorded tool call as the host keeps it (upstream ``_assistant_tool_call_dict``): ``call_id``
    (the id, or its part before a ``|``) and the derived ``response_item_id`` after ``id``, ahead of its
    ``type`` and ``function``; ``call`` itself when it carries both already or has no string id. The
    ``id`` stays as recorded: the recorded results answer it (upstream rewrites a ``call|item`` id to
    its first part; no recording contextlab reads has one)."""
    if not isinstance(call, dict) or ("call_id" in call and "response_item_id" in call):
        return call
    raw = call.get("id")
    if not isinstance(raw, str) or not raw.strip():
        return call  # the host mints a deterministic id here; a recording always has one
    head, bar, tail = raw.strip().partition("|")
    if bar:  # a stored "call_id|item_id" pair
        call_id, item = head.strip() or raw.strip(), tail.strip()
    elif raw.strip().startswith("fc_"):
        call_id, item = raw.strip(), raw.strip()
    else:
        call_id, item = raw.strip(), ""
    item = item if item.startswith("fc_") else _responses_item_id(call_id)
    made = {"id": raw, "call_id": call_id, "response_item_id": item}
    made.update((key, value) for key, value in call.items() if key not in made)
    return made


def made_assistant(row: Message) -> Message:
    """``row`` as the host keeps it (upstream ``build_assistant_message``): its content the host's,
    ``reasoning`` (the recorded reasoning text, else None) and ``finish_reason`` after it, and each
    tool call with the host's ids. The same object when it is the host's already."""
    content = row.get("content")
    made = host_content(content)
    calls = row.get("tool_calls")
    kept_calls = [host_tool_call(call) for call in calls] if isinstance(calls, list) else []
    same_calls = not isinstance(calls, list) or all(a is b for a, b in zip(kept_calls, calls, strict=True))
    if made == content and type(content) is str and same_calls and "reasoning" in row and "finish_reason" in row:
        return row
    out: Message = {"role": row.get("role", "assistant"), "content": made}
    out["reasoning"] = row.get("reasoning", row.get("reasoning_content"))
    out["finish_reason"] = row.get("finish_reason", "tool_calls" if calls else "stop")
    out.update((key, value) for key, value in row.items() if key not in out)
    if not same_calls:
        out["tool_calls"] = kept_calls
    return out
