"""contextlab's normalized transcript file: JSON Lines, a metadata header line then one message a line.

A file may hold several transcripts, each a header followed by its messages. Lossless for
everything :class:`Transcript` holds (``source`` included, kept in the header); ``load(dump(t)) == t``.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, TypeVar

from contextlab.errors import TranscriptError
from contextlab.transcripts.model import CompactionEvent, GoldFact, HostEvent, RecordedUsage, Transcript
from contextlab.transcripts.openai_chat import check_message

_T = TypeVar("_T")

HEADER_KEY = "contextlab_transcript"
FORMAT_VERSION = 1


def is_native(first_row: Any) -> bool:
    return isinstance(first_row, dict) and HEADER_KEY in first_row


def header_of(t: Transcript) -> dict[str, Any]:
    header = {
        HEADER_KEY: FORMAT_VERSION,
        "transcript_id": t.transcript_id,
        "source": t.source,
        "source_format": t.source_format,
        "model": t.model,
        "system_prompt": t.system_prompt,
        "tools": t.tools,
        "usage": {str(i): {**asdict(u), "raw": u.raw} for i, u in sorted(t.usage.items())},
        "timestamps": {str(i): ts for i, ts in sorted(t.timestamps.items())},
        "events": [asdict(e) for e in t.events],
        "facts": [asdict(f) for f in t.facts],
        "metadata": t.metadata,
    }
    if t.host_events:  # written only when present, so older files keep their bytes
        header["host_events"] = [asdict(e) for e in t.host_events]
    return header


def dumps(t: Transcript | list[Transcript]) -> str:
    """The file text: deterministic (sorted keys, no timestamps of its own)."""
    lines: list[str] = []
    for one in t if isinstance(t, list) else [t]:
        lines.append(_line(header_of(one)))
        lines += [_line(m) for m in one.messages]
    return "\n".join(lines) + "\n"


def _line(value: Any) -> str:
    """One JSON line, UTF-8 where possible; a lone surrogate (valid in JSON, not encodable as UTF-8)
    makes that line ASCII-escaped, so nothing is lost and the file stays valid UTF-8."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, sort_keys=True, ensure_ascii=True)
    return text


def dump(t: Transcript | list[Transcript], path: str | Path) -> None:
    """Write one transcript (or several, one after the other) atomically (a temporary file renamed
    into place); ``.gz`` paths are gzip-compressed with a zeroed mtime so the bytes are reproducible."""
    path = Path(path)
    data = dumps(t).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def load(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    """Every transcript of a native file (a header line starts each one)."""
    out: list[Transcript] = []
    start = 0
    for k in range(1, len(rows) + 1):
        if k == len(rows) or is_native(rows[k][1]):
            out.append(_load_one(path, rows[start:k]))
            start = k
    return out


def _load_one(path: Path, rows: list[tuple[int, Any]]) -> Transcript:
    source = str(path)
    number, header = rows[0]
    if header.get(HEADER_KEY) != FORMAT_VERSION:
        raise TranscriptError(source, f"line {number}", f"unsupported {HEADER_KEY} version {header.get(HEADER_KEY)!r}")
    try:
        usage = {int(i): _typed(RecordedUsage, u) for i, u in _field(header, "usage", dict).items()}
        timestamps = {int(i): _number(ts) for i, ts in _field(header, "timestamps", dict).items()}
        events = [_typed(CompactionEvent, e) for e in _field(header, "events", list)]
        host_events = [_typed(HostEvent, e) for e in _field(header, "host_events", list)]
        facts = [_typed(GoldFact, f) for f in _field(header, "facts", list)]
        tools = _field(header, "tools", list)
        metadata = _field(header, "metadata", dict)
    except (TypeError, ValueError, AttributeError) as error:
        raise TranscriptError(source, f"line {number}", f"bad header field: {error}") from None
    for key in ("system_prompt", "model"):
        if header.get(key) is not None and not isinstance(header.get(key), str):
            raise TranscriptError(source, f"line {number}", f"header field {key!r}: expected a string or null")
    messages = [check_message(value, source, f"line {n}") for n, value in rows[1:]]
    return Transcript(
        transcript_id=str(header.get("transcript_id") or path.name.split(".")[0]),
        messages=messages,
        system_prompt=header.get("system_prompt"),
        tools=list(tools),
        usage=usage,
        timestamps=timestamps,
        events=events,
        host_events=host_events,
        facts=facts,
        source=str(header.get("source") or source),
        source_format=str(header.get("source_format") or "contextlab"),
        model=header.get("model"),
        metadata=dict(metadata),
    )


def _field(header: dict[str, Any], key: str, kind: type) -> Any:
    value = header.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise TypeError(f"{key!r} must be a JSON {'object' if kind is dict else 'array'}, got {type(value).__name__}")
    return value


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "str": (str,),
    "bool": (bool,),
    "int | None": (int, type(None)),
    "str | None": (str, type(None)),
    "dict[str, Any]": (dict,),
}


def _typed(cls: type[_T], value: Any) -> _T:
    """``cls(**value)`` after checking every field's JSON type against the dataclass annotation."""
    if not isinstance(value, dict):
        raise TypeError(f"{cls.__name__}: expected an object, got {type(value).__name__}")
    for spec in fields(cls):  # type: ignore[arg-type]
        if spec.name not in value:
            continue
        allowed = _FIELD_TYPES.get(str(spec.type))
        item = value[spec.name]
        wrong_bool = isinstance(item, bool) and bool not in (allowed or ())
        if allowed is not None and (not isinstance(item, allowed) or wrong_bool):
            raise TypeError(f"{cls.__name__}.{spec.name}: expected {spec.type}, got {type(item).__name__}")
    return cls(**value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"timestamp: expected a number, got {type(value).__name__}")
    return float(value)
