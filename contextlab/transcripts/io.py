"""Reading transcript files: gzip transparently, JSON with errors that name file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it is gzip-compressed (by content, not by name)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TranscriptError(str(path), None, "file not found") from None
    except IsADirectoryError:
        raise TranscriptError(str(path), None, "is a directory, expected a transcript file") from None
    except OSError as error:
        raise TranscriptError(str(path), None, f"cannot read: {error.strerror}") from None
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise TranscriptError(str(path), None, f"truncated or corrupt gzip data ({error})") from None
    return raw


def read_text(path: Path) -> str:
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise TranscriptError(str(path), f"line {line}", "not valid UTF-8 text") from None


def parse_json(path: Path, text: str) -> Any:
    """Parse a whole-file JSON document; a syntax error names the line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TranscriptError(
            str(path), f"line {error.lineno}", f"invalid JSON: {error.msg} (column {error.colno})"
        ) from None


def parse_jsonl(path: Path, text: str) -> list[tuple[int, Any]]:
    """Parse JSON Lines into ``(line number, value)`` pairs, skipping blank lines."""
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line or line.isspace():  # isspace stops at the first character; strip() would copy the line
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            raise TranscriptError(
                str(path), f"line {number}", f"invalid JSON: {error.msg} (column {error.colno})"
            ) from None
    return rows
