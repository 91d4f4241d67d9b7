"""Transcripts: the normalized model, format sniffing and one loader module per input format."""

from __future__ import annotations

from pathlib import Path

from contextlab.errors import TranscriptError
from contextlab.transcripts import claude_code, mini_swe_agent, native, openai_chat, tau_bench
from contextlab.transcripts.io import parse_json, parse_jsonl, read_text
from contextlab.transcripts.model import CompactionEvent, GoldFact, RecordedUsage, Transcript

__all__ = [
    "CompactionEvent",
    "GoldFact",
    "RecordedUsage",
    "Transcript",
    "convert_file",
    "load_transcript",
    "load_transcripts",
    "save_transcript",
]


def load_transcripts(path: str | Path) -> list[Transcript]:
    """Every conversation in a file, whatever its format (sniffed from the content; gzip allowed)."""
    path = Path(path)
    text = read_text(path)
    stripped = text.lstrip()
    if not stripped:
        raise TranscriptError(str(path), None, "empty file: expected a JSON or JSON Lines transcript")
    if _is_jsonl(stripped):
        rows = parse_jsonl(path, text)
        if native.is_native(rows[0][1]):
            return native.load(path, rows)
        if claude_code.looks_like(rows):
            return claude_code.load(path, rows)
        return openai_chat.load_jsonl(path, rows)
    document = parse_json(path, text)
    if tau_bench.looks_like(document):
        return tau_bench.load(path, document)
    if mini_swe_agent.looks_like(document):
        return mini_swe_agent.load(path, document)
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
            raise TranscriptError(
                str(source), None, f"conversation {index} requested, the file holds {len(found)}"
            )
        found = [found[index]]
    native.dump(found, target)
    return found


def _is_jsonl(text: str) -> bool:
    """JSON Lines when the first line is a complete JSON value and more non-blank lines follow."""
    import json

    first, _, rest = text.partition("\n")
    if not rest.strip():
        return False
    try:
        json.loads(first)
    except ValueError:
        return False
    return True
