"""Tool-call argument JSON as the host sends it: canonical, or repaired when it does not parse.

The host rewrites the ``function.arguments`` string of every tool call on a request's copy of the
messages (``docs/host-loop.md``, *Tool-call arguments*): JSON that parses is written back with sorted
keys, no spaces and non-ASCII characters escaped, so equal arguments are equal bytes request after
request; a string that does not parse (a truncated or sloppy model output) is repaired, and one that
cannot be repaired is sent as ``{}`` so the request is still accepted. (The host's own history
never holds such a string by then: its repair writes ``{}`` over it first, ``contextlab.host.repair``;
what reaches this path is a row an engine wrote.) Rules: hermes-agent ``agent/conversation_loop.py``
(``_canonicalize_tool_call_arguments``, ``_canonicalize_api_tool_calls``) and
``agent/message_sanitization.py`` (``_repair_tool_call_arguments`` and its helpers).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

EMPTY_ARGUMENTS = "{}"
"""What an unrepairable argument string is sent as."""

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CLOSER_OF = {"{": "}", "[": "]"}
_TRIMS = 50
"""At most this many excess closing brackets are cut off the end."""


@functools.lru_cache(maxsize=4096)  # the same arguments recur (a file read again, a repeated command)
def sent_arguments(raw: str) -> str:
    """The argument string a request carries for the recorded ``raw``."""
    try:
        return json.dumps(json.loads(raw), separators=(",", ":"), sort_keys=True)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return repaired_arguments(raw)


def repaired_arguments(raw: str) -> str:
    """``raw`` (JSON that does not parse) made JSON, in the host's order of attempts; ``{}`` when
    none works."""
    text = raw.strip()
    if not text or text == "None":
        return EMPTY_ARGUMENTS
    try:
        # Literal control characters inside strings (a local model's output): parsed leniently and
        # written back escaped. The host writes this one without sorting the keys.
        return json.dumps(json.loads(text, strict=False), separators=(",", ":"))
    except (ValueError, RecursionError):
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", text)
    fixed = _closed(fixed) or fixed
    for _ in range(_TRIMS):
        if _parses(fixed) or not _ends_with_excess_closer(fixed):
            break
        fixed = fixed[:-1]
    if _parses(fixed):
        return fixed  # as repaired, not rewritten
    escaped = _controls_escaped(fixed)
    if escaped != fixed and _parses(escaped):
        return escaped
    return EMPTY_ARGUMENTS


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _closed(text: str) -> str | None:
    """``text`` with every bracket it opens closed, innermost first, brackets inside strings not
    counted. A closer that would close an outer bracket while inner ones are open gets their closers
    inserted before it (``{"a": [1}`` -> ``{"a": [1]}``); a closer nothing opened is kept (the trim
    after this removes it from the end). None: the text ends inside a string, which cannot be
    guessed."""
    out: list[str] = []
    expected: list[str] = []  # the closers of the open brackets, innermost last
    in_string = False
    i = 0
    while i < len(text):
        char = text[i]
        if in_string:
            if char == "\\":
                out.append(text[i : i + 2])  # an escape pair, whatever it escapes
                i += 2
                continue
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in _CLOSER_OF:
            expected.append(_CLOSER_OF[char])
        elif char in "}]" and char in expected:
            while expected[-1] != char:
                out.append(expected.pop())
            expected.pop()
        out.append(char)
        i += 1
    if in_string:
        return None
    return "".join(out) + "".join(reversed(expected))


def _ends_with_excess_closer(text: str) -> bool:
    """The text ends with a closing bracket of a kind it has more of than openers."""
    return (text.endswith("}") and text.count("}") > text.count("{")) or (
        text.endswith("]") and text.count("]") > text.count("[")
    )


def _controls_escaped(text: str) -> str:
    """``text`` with each control character (below U+0020) inside a string written as ``\\uXXXX``."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        char = text[i]
        if in_string and char == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if char == '"':
            in_string = not in_string
        out.append(f"\\u{ord(char):04x}" if in_string and char < " " else char)
        i += 1
    return "".join(out)


def parsed_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as the host dispatches them: a JSON object string (or an object) as a dict,
    anything else (blank, not JSON, not an object) as ``{}``."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
