"""Text helpers shared by the probes: the payload of a message and the mechanical extractors.

Every extractor is a fixed regular expression (``docs/metrics.md`` §Extractors), so the same message
always yields the same identifiers, error fingerprints and sentences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from contextlab.engine import Message
from contextlab.engines.summarizers.extractive import error_fingerprint  # one fingerprint rule for engines and probes
from contextlab.messages import content_text, tool_call_arguments, tool_calls


def message_payload(message: Message) -> str:
    """The text a provider sees in a message: content plus tool-call names and arguments.

    Arguments are JSON: a fact with quotes or newlines appears escaped in the raw string, so the
    decoded values are added as well (engines.md §6: "match tool JSON both raw and unescaped").
    """
    parts = [content_text(message)]
    for call in tool_calls(message):
        arguments = tool_call_arguments(call)
        parts.append(arguments)
        if "\\" not in arguments:
            continue  # nothing escaped: the decoded values are already substrings of the raw JSON
        try:
            decoded = json.loads(arguments)
        except (ValueError, TypeError):
            continue
        if isinstance(decoded, dict):
            parts.extend(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in decoded.values())
        else:
            parts.append(json.dumps(decoded, ensure_ascii=False))
    return "\n".join(parts)


# Identifier shapes (the Hermes anchor index, engines.md §5.0): URLs, paths, SHAs, #refs, versions,
# file names, ALL-CAPS codes with digits (ticket ids, error codes), and backticked tokens. Candidates
# are found by one character-class scan (C speed, no backtracking) and classified by one full match:
# a single alternation with lookaheads over the whole text is ~20x slower.
_CANDIDATE = re.compile(r"[\w./:#@+~-]{5,}")
_MARK = re.compile(r"[\d/.#-]")
_IDENTIFIER = re.compile(
    r"https?://[^\s<>\"'`)\]]+"
    r"|(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]*\w"  # absolute, ./ or ~/ paths
    r"|(?:[\w.@+-]+/)+[\w@+-]+\.\w{1,6}"  # relative paths with an extension
    r"|(?:[\w.@+-]+/){2,}[\w.@+-]*\w"  # two or more segments ("role/tool" labels are not paths)
    r"|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
    r"|#\d{2,6}"
    r"|v?\d+\.\d+\.\d+(?:[-.][0-9A-Za-z]+)*"
    r"|[\w-]+\.(?:py|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|rs|go|java|rb|sh|sql|html|css|cfg|ini|lock|csv)"
    r"|[A-Z][A-Z0-9]{1,9}-[A-Z0-9-]*\d[A-Z0-9-]*"
)
_BACKTICKED = re.compile(r"`([^`\s]{5,80})`")
MIN_IDENTIFIER_CHARS = 5
"""Shorter tokens (``a.py``, ``#12``) occur by chance too often to say anything about retention."""


def identifiers(text: str) -> list[str]:
    """Identifier-like tokens of ``text``, in order of first occurrence, without duplicates."""
    if not text:
        return []
    seen: dict[str, None] = {}
    full = _IDENTIFIER.fullmatch
    mark = _MARK.search
    for raw in _CANDIDATE.findall(text):
        token = raw.rstrip(".,:;-")
        if token in seen or len(token) < MIN_IDENTIFIER_CHARS or mark(token) is None:
            continue
        if "://" in token:
            start = text.find(token)
            url = _IDENTIFIER.match(text, start) if start >= 0 else None
            token = url.group(0).rstrip(".,:;") if url else token
        if full(token) is not None:
            seen[token] = None
    if "`" in text:
        for match in _BACKTICKED.finditer(text):
            token = match.group(1).strip()
            if len(token) >= MIN_IDENTIFIER_CHARS:
                seen.setdefault(token, None)
    return list(seen)


_ERROR_LINE = re.compile(r"\b(?:ERROR|FATAL|CRITICAL|PANIC|FAIL(?:ED|URE)?|Traceback|Exception|Error:)")
EXEMPLAR_CHARS = 100
"""An error exemplar is the line's first 100 characters: summaries quote error lines cut at 120-160."""


def error_lines(text: str) -> Iterator[tuple[str, str]]:
    """``(fingerprint, exemplar)`` for every error line of a tool output."""
    if not text or _ERROR_LINE.search(text) is None:
        return
    for line in text.splitlines():
        if _ERROR_LINE.search(line) is None:
            continue
        exemplar = line.strip()[:EXEMPLAR_CHARS].strip()
        if len(exemplar) >= 8:
            yield error_fingerprint(exemplar), exemplar


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|don't|do not|avoid|only|make sure|required?|should(?:n't)?|please keep)\b", re.I
)
_CORRECTION = re.compile(
    r"^(?:no\b|nope\b|actually\b|wait\b|instead\b|stop\b|that's (?:wrong|not)|that is (?:wrong|not)|not that\b|undo\b)"
    r"|\b(?:i said|i meant|you (?:broke|missed|forgot))\b",
    re.I,
)
SENTENCE_CHARS = 160


def constraint_sentences(text: str) -> Iterator[tuple[str, str]]:
    """``(sentence, "instruction" | "correction")`` for the constraint sentences of a user message."""
    for raw in _SENTENCE_SPLIT.split(text):
        sentence = raw.strip(" -*#>\t")[:SENTENCE_CHARS].strip()
        if len(sentence) < 12:
            continue
        if _CORRECTION.search(sentence):
            yield sentence, "correction"
        elif _CONSTRAINT.search(sentence):
            yield sentence, "instruction"


def task_text(text: str) -> str:
    """The literal that stands for a user ask: its first non-empty line, cut to 160 characters."""
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 8:
            return line[:SENTENCE_CHARS].strip()
    return ""


_DECISION = re.compile(
    r"\b(?:decided|decide to|instead|because|root cause|chose|the fix is|going with|will use)\b", re.I
)


def decision_sentences(text: str) -> Iterator[str]:
    """Assistant sentences that record a decision (cue words as in engines.md §5.0)."""
    if not text or _DECISION.search(text) is None:
        return
    for raw in _SENTENCE_SPLIT.split(text):
        sentence = raw.strip(" -*#>\t")
        if 20 <= len(sentence) <= 200 and _DECISION.search(sentence):
            yield sentence
