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


def made_assistant(row: Message) -> Message:
    """``row`` as the host keeps it: the same object when its content is already the host's."""
    content = row.get("content")
    made = host_content(content)
    return row if made == content and type(content) is str else {**row, "content": made}
