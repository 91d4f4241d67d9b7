"""Deterministic one-line descriptions of tool calls and their results (shared by pruning and summaries).

The host replaces old tool results with an informative one-liner instead of a bare placeholder
(``host-contract.md`` §2d pass 2), e.g. ``[terminal] ran `make test` -> exit 1, 42 lines output``.
Nothing here depends on time or randomness, so a rewritten message is byte-stable across requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from contextlab.textmemo import TextMemo

_COMMAND_KEYS = ("command", "cmd", "script", "code")
_PATH_KEYS = ("path", "file_path", "file", "filename", "notebook_path", "target_file", "filepath")
_EXIT_PATTERNS = (
    re.compile(r'"(?:exit_code|exitCode|returncode|return_code|status_code)"\s*:\s*(-?\d+)'),
    re.compile(r"(?i)\bexit(?:ed)?(?: with)?(?: code| status)?[ :=]+(-?\d+)"),
    re.compile(r"(?i)\breturn ?code[ :=]+(-?\d+)"),
)
_EXIT_WORDS = ("", "exit", "return")
"""Per exit pattern, a lowercase word every match holds (checked on ASCII text only; "": none)."""
_ERROR_LINE = re.compile(
    r"(?:\b(?:ERROR|FATAL|CRITICAL|PANIC|FAIL(?:ED|URE)?)\b|Traceback \(most recent call last\)|"
    r"\b[A-Z]\w*(?:Error|Exception):|\berror(?:\[\w+\])?:|\bfatal:)"
)


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters (with an ellipsis)."""
    if len(text) > 4 * limit + 64:
        # Collapsing a prefix of ``text`` gives a prefix of the collapsed text (a word cut at the
        # end is a prefix of the whole word), so a long raw tool output need not be split whole
        # when its head already fills the line.
        head = " ".join(text[: 4 * limit + 64].split())
        if len(head) > limit:
            return head[: max(0, limit - 3)] + "..."
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def exit_code(text: str) -> int | None:
    """An exit code reported in a tool result, if any."""
    head = text[:2000]
    tail = text[-2000:] if len(text) > 2000 else ""
    windows = [(head, head.lower() if head.isascii() else None)]
    if tail:
        windows.append((tail, tail.lower() if tail.isascii() else None))
    for pattern, word in zip(_EXIT_PATTERNS, _EXIT_WORDS, strict=True):
        for window, lowered in windows:
            # The case-insensitive patterns start with ``\b`` (a try at every position): on ASCII
            # text they cannot match where their lowercase word is absent from the lowercase text.
            if word and lowered is not None and word not in lowered:
                continue
            match = pattern.search(window)
            if match:
                return int(match.group(1))
    return None


_ERROR_HINTS = (
    "ERROR",
    "FATAL",
    "CRITICAL",
    "PANIC",
    "FAIL",
    "Traceback",
    "Error:",
    "Exception:",
    "error:",
    "error[",
    "fatal:",
)
"""Literal substrings one of which every :data:`_ERROR_LINE` match contains."""
ERROR_HINT = re.compile("|".join(map(re.escape, _ERROR_HINTS)))
"""Finds any of :data:`_ERROR_HINTS` in one pass (for many short texts; long texts use ``in``)."""


def _hinted_spans(text: str, view: str | bytes) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each line of ``text`` holding one of :data:`_ERROR_HINTS`, in order; lines
    end at a newline of ``view`` (``text``, or a translation of it with other breaks made newlines).

    The hints are found by substring searches, C-speed scans that skip the lines between them, where
    ``_ERROR_LINE`` (led by a ``\\b`` and a ``\\w*`` run) would try a match at every position.
    """
    newline: Any = "\n" if isinstance(view, str) else b"\n"
    found = [text.find(hint) for hint in _ERROR_HINTS]
    while True:
        at = min((position for position in found if position >= 0), default=-1)
        if at < 0:
            return
        start = view.rfind(newline, 0, at) + 1
        end = view.find(newline, at)
        end = end if end >= 0 else len(text)
        yield start, end
        # Hints never hold a line break: the next line with one starts after this line's end.
        found = [text.find(hint, end) if 0 <= p < end else p for hint, p in zip(_ERROR_HINTS, found, strict=True)]


_ASCII_BREAKS = bytes(c for c in range(128) if len(f"a{chr(c)}b".splitlines()) == 2)
"""The ASCII bytes ``str.splitlines`` breaks lines at (newline, 0x0b-0x0d, 0x1c-0x1e)."""
_BREAKS_TO_NEWLINE = bytes.maketrans(_ASCII_BREAKS, b"\n" * len(_ASCII_BREAKS))


def lines_that_may_report_errors(text: str) -> Iterable[str]:
    """The lines of ``text.splitlines()`` that can report an error, in order: on ASCII text only
    those holding an error hint (found by :func:`_hinted_spans`); on other text every line."""
    if not text.isascii():
        return text.splitlines()
    return (text[start:end] for start, end in _hinted_spans(text, text.encode("ascii").translate(_BREAKS_TO_NEWLINE)))


def first_error_line(text: str) -> str | None:
    """The first line of ``text`` that looks like an error report."""
    if not any(hint in text for hint in _ERROR_HINTS):
        return None
    if "\n" not in text:  # one line (most calls): the regex scans no more than the line
        return text.strip() if _ERROR_LINE.search(text) is not None else None
    # Every _ERROR_LINE match holds a hint and stays within its line, so the first match is on
    # the first hinted line that has one (its \b tests see the same newlines or ends at the bounds).
    for start, end in _hinted_spans(text, text):
        if _ERROR_LINE.search(text, start, end) is not None:
            return text[start:end].strip()
    return None


def call_target(name: str, args: dict[str, Any]) -> str:
    """What a call acted on: its path, else its command, else its first short string argument."""
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return one_line(value, 120)
    for key in sorted(args):
        value = args[key]
        if isinstance(value, str) and value and len(value) <= 120:
            return f"{key}={one_line(value, 80)}"
    return ""


def is_terminal(name: str) -> bool:
    lowered = name.lower()
    return lowered in {"terminal", "bash", "shell", "run", "exec", "execute_command"} or "command" in lowered


def is_read(name: str) -> bool:
    lowered = name.lower()
    return lowered in {"read", "view", "cat"} or lowered.startswith("read")


def result_outcome(content: str) -> str:
    """A short outcome for an action line: the error, the exit code, or ``ok``."""
    # Summaries re-read overlapping spans: each result is described once.
    return _OUTCOMES(content)


def result_outcome_uncached(content: str) -> str:
    """:func:`result_outcome` computed afresh (what its memo remembers)."""
    error = error_line_of(content)
    if error:
        return f"error: {one_line(error, 100)}"
    code = exit_code(content)
    if code is not None:
        return "ok (exit 0)" if code == 0 else f"failed (exit {code})"
    return f"ok ({line_count(content)} lines)"


_LINE_BREAKS_BUT_NEWLINE = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
"""What ``str.splitlines`` splits on besides ``\n``."""


def line_count(text: str) -> int:
    """``len(text.splitlines())`` without building the list of lines when ``\n`` is the only break."""
    if any(br in text for br in _LINE_BREAKS_BUT_NEWLINE):
        return len(text.splitlines())
    if not text:
        return 0
    return text.count("\n") + (not text.endswith("\n"))


_OUTCOMES = TextMemo(result_outcome_uncached)

error_line_of = TextMemo(first_error_line)
""":func:`first_error_line` of a whole text, remembered: a summary asks it of each tool result twice
(its outcome and its error lines), on every compaction whose span holds the result."""
