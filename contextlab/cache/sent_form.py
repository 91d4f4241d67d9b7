"""What a block weighs as sent, and bytes that name it, without writing a tool result's JSON text.

The cache model needs, for each block, the size of its JSON text as a provider receives it
(``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``) and a digest that two blocks share
exactly when their values are equal. A tool result is ``[tool_call_id, content]`` with a content of
kilobytes: escaping it costs several times what encoding and counting its bytes does (on
``coding-agent`` repeated 4x, 17 MB of results: about 59 ms against 25 ms), so its size is counted
from the content's UTF-8 bytes and its digest taken over an injective encoding of the pair (the
id's length, the id, then the content). Other values (tool calls, content parts, tool schemas) are
small and go through ``json.dumps``.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ESCAPED = re.compile(rb'[\x00-\x1f"\\]')
_NOT_CONTROL = bytes(range(0x20, 0x100))
_SHORT_ESCAPES = (b"\n", b"\r", b"\t", b"\b", b"\f")
_SHORT = 512  # below this many bytes, one regex search beats the counting passes


def json_string_size(data: bytes) -> int:
    """Bytes of the JSON string literal (quotes included) of the UTF-8 text ``data``, as
    ``json.dumps(..., ensure_ascii=False)`` writes it.

    ``"`` and ``\\`` take one byte more, ``\\n \\r \\t \\b \\f`` one more, other control characters
    five more (``\\u00XX``). Bytes of multi-byte characters are all 0x80 or above, so counting bytes
    counts characters.
    """
    if len(data) < _SHORT and _ESCAPED.search(data) is None:
        return len(data) + 2
    size = len(data) + 2 + data.count(b'"') + data.count(b"\\")
    controls = data.translate(None, _NOT_CONTROL)
    if controls:
        short = sum(map(controls.count, _SHORT_ESCAPES))
        size += short + 5 * (len(controls) - short)
    return size


def sent_form(value: Any) -> tuple[int, list[bytes]]:
    """``(size, pieces)``: the bytes of ``value``'s compact JSON text, and byte pieces whose
    concatenation names ``value`` (equal values, and only those, give equal concatenations)."""
    if type(value) in (list, tuple) and len(value) == 2 and type(value[0]) is str and type(value[1]) is str:
        call_id, content = value[0].encode("utf-8", "replace"), value[1].encode("utf-8", "replace")
        size = 3 + json_string_size(call_id) + json_string_size(content)  # [ , ]
        return size, [b"pair", len(call_id).to_bytes(8, "little"), call_id, content]
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
    return len(text), [b"json", text]
