"""Gold-facts sidecar files: retention probes for a transcript that carries no facts of its own.

Format (JSON Lines, one fact a line; or a JSON list of the same objects; ``#`` lines are comments)::

    {"text": "PG_PORT=6543", "category": "artifact", "needed_later": true}
    {"id": "deadline", "text": "ship by Friday", "message_index": 4}

``text`` (required) is a literal string the probe looks for in every request. ``message_index``
(optional) is the message that introduces the fact; when omitted it is the first message whose text
contains ``text`` (an error if none does: a probe for a string the conversation never holds would
measure nothing). ``id`` defaults to ``fact-<line>``, ``category`` to ``recall`` (one of ``recall``,
``artifact``, ``continuation``, ``decision``), ``needed_later`` to ``false``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError
from contextlab.messages import content_text, tool_call_arguments, tool_calls
from contextlab.transcripts.io import decode_text, jsonl_lines, read_bytes
from contextlab.transcripts.model import GoldFact, Transcript

CATEGORIES = ("recall", "artifact", "continuation", "decision")
FIELDS = frozenset({"id", "text", "message_index", "category", "needed_later"})


def load_facts(path: str | Path, transcript: Transcript) -> list[GoldFact]:
    """The facts of a sidecar file, located in ``transcript``.

    Raises:
        TranscriptError: unreadable file, a bad field (named with its line), or a fact whose text
            the transcript never contains.
    """
    path = Path(path)
    source = str(path)
    text = decode_text(path, read_bytes(path))
    entries = _entries(source, text)
    haystack = [_message_text(m) for m in transcript.messages]
    facts: list[GoldFact] = []
    seen: set[str] = set()
    for where, raw in entries:
        if not isinstance(raw, dict):
            raise TranscriptError(source, where, f"expected a fact object, got {type(raw).__name__}")
        unknown = sorted(set(raw) - FIELDS)
        if unknown:
            raise TranscriptError(source, where, f"unknown field {unknown[0]!r} (fields: {', '.join(sorted(FIELDS))})")
        fact_text = raw.get("text")
        if not isinstance(fact_text, str) or not fact_text:
            raise TranscriptError(source, where, "field 'text': expected a non-empty string")
        fact_id = raw.get("id", f"fact-{where.split()[-1]}")
        if not isinstance(fact_id, str) or fact_id in seen:
            raise TranscriptError(source, where, f"field 'id': expected a unique string, got {fact_id!r}")
        seen.add(fact_id)
        category = raw.get("category", "recall")
        if category not in CATEGORIES:
            allowed = ", ".join(CATEGORIES)
            raise TranscriptError(source, where, f"field 'category': {category!r} is not one of {allowed}")
        needed = raw.get("needed_later", False)
        if not isinstance(needed, bool):
            raise TranscriptError(source, where, "field 'needed_later': expected true or false")
        index = raw.get("message_index")
        if index is None:
            index = next((i for i, h in enumerate(haystack) if fact_text in h), None)
            if index is None:
                raise TranscriptError(
                    source, where, f"text {fact_text[:60]!r} is not in any message of {transcript.transcript_id}"
                )
        elif isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(haystack):
            raise TranscriptError(
                source, where, f"field 'message_index': expected 0..{len(haystack) - 1}, got {index!r}"
            )
        facts.append(GoldFact(fact_id, fact_text, index, str(category), needed))
    if not facts:
        raise TranscriptError(source, None, "no facts in this file")
    return facts


def _entries(source: str, text: str) -> list[tuple[str, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            values = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise TranscriptError(source, None, f"invalid JSON: {error}") from None
        return [(f"fact {i}", v) for i, v in enumerate(values)]
    out = []
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            out.append((f"line {number}", json.loads(line)))
        except (ValueError, RecursionError) as error:
            raise TranscriptError(source, f"line {number}", f"invalid JSON: {error}") from None
    return out


def _message_text(message: dict[str, Any]) -> str:
    parts = [content_text(message)]
    parts += [tool_call_arguments(c) for c in tool_calls(message)]
    return "\n".join(parts)
