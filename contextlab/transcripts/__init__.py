"""Transcripts: the normalized model, format sniffing and one loader module per input format."""

from __future__ import annotations

import gc
import json
import re
import warnings
from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError
from contextlab.messages import validate_messages
from contextlab.transcripts import aider, hermes, native
from contextlab.transcripts.formats import FORMATS, unknown_format
from contextlab.transcripts.io import (
    GZIP_MAGIC,
    SQLITE_MAGIC,
    BadNumber,
    decode_text,
    parse_json,
    parse_jsonl,
    read_raw,
)
from contextlab.transcripts.issues import TranscriptWarning
from contextlab.transcripts.model import CompactionEvent, GoldFact, RecordedUsage, Transcript
from contextlab.transcripts.sniffing import DOCUMENT_READERS, ROW_READERS, first_reader

__all__ = [
    "FORMATS",
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
    except BadNumber as error:  # a usage count deep inside an importer: name the file at least
        raise TranscriptError(str(path), None, str(error)) from None
    except RecursionError:
        raise TranscriptError(str(path), None, "nested too deeply to be a transcript") from None
    finally:
        if paused:
            gc.enable()
    if not found:  # e.g. recorded requests whose message lists are all empty: nothing to replay
        raise TranscriptError(str(path), None, "no conversation: the file holds no message to replay")
    for transcript in found:
        record_violations(transcript)
    return found


def record_violations(transcript: Transcript) -> None:
    """List the structural violations the source really has in ``metadata`` (and warn about them),
    so that a converted transcript never hides them."""
    last = len(transcript.messages) - 1
    # A recording that ends on a tool call is the normal agent step (the call was being run when the
    # log ended, or the request/response pair was logged alone): not a structural problem.
    found = [
        str(v)
        for v in validate_messages(transcript.messages)
        if not (v.rule == "unanswered_tool_call" and v.index == last)
    ]
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
    raw = read_raw(path)
    if raw.startswith(SQLITE_MAGIC):
        return hermes.load_state_db(path)
    if raw[:2] == GZIP_MAGIC:
        import gzip

        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise TranscriptError(str(path), None, f"truncated or corrupt gzip data ({error})") from None
    text = decode_text(path, raw)
    start = _first_non_space(text, 0)
    if start < 0:
        raise TranscriptError(str(path), None, "empty file: expected a JSON or JSON Lines transcript")
    if text[start] not in "[{":
        if aider.looks_like_llm_history(text):
            return aider.load_llm_history(path, text)
        if aider.looks_like_chat_history(text):
            return aider.load_chat_history(path, text)
        # Prose (a README, notes) is no format; a JSON scalar is parsed to name the broken spot.
        if (not text[start].isdigit() and text[start] not in '"-tfn') or path.suffix.lower() in (".md", ".txt"):
            raise unknown_format(str(path), None)
    if _is_jsonl(text, start):
        return _load_rows(path, parse_jsonl(path, text))
    document = parse_json(path, text)
    reader = first_reader(DOCUMENT_READERS, document)
    if reader is None:
        raise unknown_format(str(path), document)
    return reader.load(path, document)


def _load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    reader = first_reader(ROW_READERS, rows)
    if reader is None:
        raise unknown_format(str(path), rows[0][1])
    return reader.load(path, rows)


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
