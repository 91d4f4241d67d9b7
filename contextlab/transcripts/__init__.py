"""Transcripts: the normalized model, format sniffing and one loader module per input format."""

from __future__ import annotations

import gc
import json
import re
import warnings
from pathlib import Path

from contextlab.errors import TranscriptError
from contextlab.messages import validate_messages
from contextlab.transcripts import (
    anthropic,
    claude_code,
    mini_swe_agent,
    native,
    openai_chat,
    sharegpt,
    swe_agent,
    tau_bench,
)
from contextlab.transcripts.io import parse_json, parse_jsonl, read_text
from contextlab.transcripts.issues import TranscriptWarning
from contextlab.transcripts.model import CompactionEvent, GoldFact, RecordedUsage, Transcript

__all__ = [
    "CompactionEvent",
    "GoldFact",
    "RecordedUsage",
    "Transcript",
    "TranscriptWarning",
    "convert_file",
    "load_transcript",
    "load_transcripts",
    "save_transcript",
]


FORMATS: tuple[str, ...] = (
    "contextlab (native JSONL)",
    "claude-code (session and subagent JSONL)",
    "tau-bench (result JSON)",
    "mini-swe-agent (.traj.json)",
    "swe-agent (.traj)",
    "sharegpt (conversations with from/value; Hermes Agent trajectories)",
    "anthropic (Messages API request/response JSON)",
    "openai (chat JSON and JSONL)",
)
"""The formats :func:`load_transcripts` recognises, in sniffing order."""
VIOLATIONS_KEY = "structural_violations"


def load_transcripts(path: str | Path) -> list[Transcript]:
    """Every conversation in a file, whatever its format (sniffed from the content; gzip allowed).

    Raises:
        TranscriptError: the file is unreadable, malformed, or in no supported shape; the message
            names the file, the line or message index, and what was expected.
    """
    path = Path(path)
    # Parsing allocates many small containers and no reference cycles: pausing the cyclic
    # collector meanwhile saves it from repeatedly scanning the growing, all-live object graph.
    paused = gc.isenabled()
    gc.disable()
    try:
        found = _sniff_and_load(path)
    finally:
        if paused:
            gc.enable()
    for transcript in found:
        record_violations(transcript)
    return found


def record_violations(transcript: Transcript) -> None:
    """List the structural violations the source really has in ``metadata`` (and warn about them),
    so that a converted transcript never hides them."""
    found = [str(v) for v in validate_messages(transcript.messages)]
    if found:
        transcript.metadata[VIOLATIONS_KEY] = found
        warnings.warn(
            f"{transcript.source}: {transcript.transcript_id}: {len(found)} structural violation(s), "
            f"first: {found[0]} (listed in metadata[{VIOLATIONS_KEY!r}])",
            TranscriptWarning,
            stacklevel=3,
        )
    else:
        transcript.metadata.pop(VIOLATIONS_KEY, None)


def _sniff_and_load(path: Path) -> list[Transcript]:
    text = read_text(path)
    start = _first_non_space(text, 0)
    if start < 0:
        raise TranscriptError(str(path), None, "empty file: expected a JSON or JSON Lines transcript")
    if _is_jsonl(text, start):
        rows = parse_jsonl(path, text)
        if native.is_native(rows[0][1]):
            return native.load(path, rows)
        if claude_code.looks_like(rows):
            return claude_code.load(path, rows)
        if sharegpt.looks_like_rows(rows):
            return sharegpt.load_rows(path, rows)
        if anthropic.looks_like_rows(rows):
            return anthropic.load_rows(path, rows)
        return openai_chat.load_jsonl(path, rows)
    document = parse_json(path, text)
    if native.is_native(document):  # a native file holding one transcript without messages
        return native.load(path, [(1, document)])
    if claude_code.looks_like([(1, document)]):  # a one-line session log
        return claude_code.load(path, [(1, document)])
    for module in (tau_bench, mini_swe_agent, swe_agent, sharegpt, anthropic):
        if module.looks_like(document):
            loaded: list[Transcript] = module.load(path, document)
            return loaded
    return openai_chat.load_json(path, document)


def load_transcript(path: str | Path, index: int = 0) -> Transcript:
    """One conversation from a file (the ``index``-th when the file holds several)."""
    found = load_transcripts(path)
    if not 0 <= index < len(found):
        raise TranscriptError(str(path), None, f"conversation {index} requested, the file holds {len(found)}")
    return found[index]


def save_transcript(transcript: Transcript | list[Transcript], path: str | Path) -> None:
    """Write the normalized JSON Lines form (gzip when the name ends in ``.gz``); a list of
    transcripts goes into one file and loads back as that list."""
    native.dump(transcript, path)


def convert_file(source: str | Path, target: str | Path, index: int | None = None) -> list[Transcript]:
    """Load ``source`` (any supported format) and write it in the normalized form; returns what was
    written. ``index`` picks one conversation of a multi-conversation file."""
    found = load_transcripts(source)
    if index is not None:
        if not 0 <= index < len(found):
            raise TranscriptError(str(source), None, f"conversation {index} requested, the file holds {len(found)}")
        found = [found[index]]
    native.dump(found, target)
    return found


def _is_jsonl(text: str, start: int) -> bool:
    """JSON Lines when the first line is a complete JSON value and more non-blank lines follow.

    Works on offsets: copying or stripping a multi-megabyte text here would cost as much as parsing it.
    """
    end = text.find("\n", start)
    if end < 0 or _first_non_space(text, end) < 0:
        return False
    try:
        json.loads(text[start:end])
    except ValueError:
        return False
    return True


_NON_SPACE = re.compile(r"\S")


def _first_non_space(text: str, start: int) -> int:
    found = _NON_SPACE.search(text, start)
    return found.start() if found else -1
