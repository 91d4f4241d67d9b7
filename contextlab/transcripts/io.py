"""Reading transcript files: regular files only, gzip transparently, a byte-order mark accepted, JSON
with errors that name file and line (never a hang on a pipe, never a crash on absurd nesting)."""

from __future__ import annotations

import gzip
import json
import math
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"


def check_regular_file(path: Path) -> None:
    """Refuse anything but a regular file *before* opening it: opening a FIFO blocks until a writer
    appears, and a device may never end."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise TranscriptError(str(path), None, "file not found") from None
    except OSError as error:
        raise TranscriptError(str(path), None, f"cannot read: {error.strerror}") from None
    if stat.S_ISDIR(mode):
        raise TranscriptError(str(path), None, "is a directory, expected a transcript file")
    if not stat.S_ISREG(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
        raise TranscriptError(str(path), None, f"is {kind}; save the transcript to a regular file first")


def read_raw(path: Path) -> bytes:
    """The file's bytes as stored (no decompression), after :func:`check_regular_file`."""
    check_regular_file(path)
    try:
        return path.read_bytes()
    except OSError as error:
        raise TranscriptError(str(path), None, f"cannot read: {error.strerror}") from None


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it is gzip-compressed (by content, not by name)."""
    raw = read_raw(path)
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise TranscriptError(str(path), None, f"truncated or corrupt gzip data ({error})") from None
    return raw


def decode_text(path: Path, raw: bytes) -> str:
    """UTF-8 text; a leading byte-order mark (as some Windows editors write) is dropped."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise TranscriptError(str(path), f"line {line}", "not valid UTF-8 text") from None


def read_text(path: Path) -> str:
    return decode_text(path, read_bytes(path))


def loads(text: str) -> Any:
    """``json.loads`` with absurd nesting turned into a ``ValueError`` (the parser recurses)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply (more levels than any transcript has)") from None


def json_or_value(value: Any) -> Any:
    """The JSON a string holds (a body or payload captured as text), else ``value`` unchanged."""
    if isinstance(value, str):
        try:
            return loads(value)
        except ValueError:
            return value
    return value


def parse_json(path: Path, text: str) -> Any:
    """Parse a whole-file JSON document; a syntax error names the line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise TranscriptError(
            str(path), f"line {error.lineno}", f"invalid JSON: {error.msg} (column {error.colno})"
        ) from None
    except RecursionError:
        raise TranscriptError(str(path), None, "invalid JSON: nested too deeply to be a transcript") from None


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text. Records end at ``\n`` only: ``str.splitlines`` also breaks
    at characters a JSON string may hold raw (U+0085, U+2028, U+2029), which would cut a record
    in two; the ``\r`` of a CRLF file is JSON whitespace."""
    return text.split("\n")


def parse_jsonl(path: Path, text: str) -> list[tuple[int, Any]]:
    """Parse JSON Lines into ``(line number, value)`` pairs, skipping blank lines."""
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line or line.isspace():  # isspace stops at the first character; strip() would copy the line
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            raise TranscriptError(
                str(path), f"line {number}", f"invalid JSON: {error.msg} (column {error.colno})"
            ) from None
        except RecursionError:
            raise TranscriptError(str(path), f"line {number}", "invalid JSON: nested too deeply") from None
    return rows


class BadNumber(ValueError):
    """A usage count that is not a finite, non-negative number (``NaN``, ``Infinity``, text, ...)."""


@contextmanager
def counts_at(source: str, where: str | None) -> Iterator[None]:
    """Name the place of a bad recorded token count: a :class:`BadNumber` inside becomes a
    :class:`TranscriptError` for ``source`` at ``where`` (line, message or response)."""
    try:
        yield
    except BadNumber as error:
        raise TranscriptError(source, where, str(error)) from None


def token_count(value: Any, field: str) -> int:
    """A recorded token count as an ``int``; ``None``/missing is 0.

    Raises:
        BadNumber: ``NaN``, ``Infinity``, a negative or non-numeric value (the loader turns it into a
            one-line :class:`TranscriptError` naming the file and the field).
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise BadNumber(f"field {field!r}: expected a token count, got a boolean")
    if isinstance(value, str):
        try:
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            raise BadNumber(f"field {field!r}: expected a token count, got {value!r}") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BadNumber(f"field {field!r}: {value} is not a token count (NaN/Infinity in recorded usage)")
        value = int(value)
    if not isinstance(value, int):
        raise BadNumber(f"field {field!r}: expected a token count, got {type(value).__name__}")
    if value < 0:
        raise BadNumber(f"field {field!r}: negative token count {value}")
    return value
