"""contextlab's normalized transcript file: JSON Lines, a metadata header line then one message a line.

Lossless for everything :class:`Transcript` holds; ``load(dump(t)) == t``.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError
from contextlab.transcripts.model import CompactionEvent, GoldFact, RecordedUsage, Transcript
from contextlab.transcripts.openai_chat import check_message

HEADER_KEY = "contextlab_transcript"
FORMAT_VERSION = 1


def is_native(first_row: Any) -> bool:
    return isinstance(first_row, dict) and HEADER_KEY in first_row


def header_of(t: Transcript) -> dict[str, Any]:
    return {
        HEADER_KEY: FORMAT_VERSION,
        "transcript_id": t.transcript_id,
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


def dumps(t: Transcript) -> str:
    """The file text: deterministic (sorted keys, no timestamps of its own)."""
    lines = [json.dumps(header_of(t), sort_keys=True, ensure_ascii=False)]
    lines += [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in t.messages]
    return "\n".join(lines) + "\n"


def dump(t: Transcript, path: str | Path) -> None:
    """Write atomically (a temporary file renamed into place); ``.gz`` paths are gzip-compressed
    with a zeroed mtime so the bytes are reproducible."""
    path = Path(path)
    data = dumps(t).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def load(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    source = str(path)
    number, header = rows[0]
    if header.get(HEADER_KEY) != FORMAT_VERSION:
        raise TranscriptError(source, f"line {number}", f"unsupported {HEADER_KEY} version {header.get(HEADER_KEY)!r}")
    try:
        usage = {int(i): RecordedUsage(**u) for i, u in (header.get("usage") or {}).items()}
        timestamps = {int(i): float(ts) for i, ts in (header.get("timestamps") or {}).items()}
        events = [CompactionEvent(**e) for e in header.get("events") or []]
        facts = [GoldFact(**f) for f in header.get("facts") or []]
    except (TypeError, ValueError) as error:
        raise TranscriptError(source, f"line {number}", f"bad header field: {error}") from None
    messages = [check_message(value, source, f"line {n}") for n, value in rows[1:]]
    return [
        Transcript(
            transcript_id=str(header.get("transcript_id") or path.name.split(".")[0]),
            messages=messages,
            system_prompt=header.get("system_prompt"),
            tools=list(header.get("tools") or []),
            usage=usage,
            timestamps=timestamps,
            events=events,
            facts=facts,
            source=source,
            source_format=str(header.get("source_format") or "contextlab"),
            model=header.get("model"),
            metadata=dict(header.get("metadata") or {}),
        )
    ]
