"""Logs of captured provider calls, one ``{request, response}`` entry per call: claude-trace captures
(``.claude-trace/log-*.jsonl``: ``request.body`` and ``response.body`` or the raw event stream in
``response.body_raw``), JSON Lines or JSON lists of Anthropic request/response pairs, and proxy logs
of OpenAI chat calls in the same shape. Each entry is one full request; the conversation is rebuilt
from the growing prefix (:mod:`~contextlab.transcripts.per_request`) with each call's usage kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import Transcript
from contextlab.transcripts.per_request import Step, parse_time, rebuild
from contextlab.transcripts.provider_calls import body_of, is_request_body, step


def is_call(value: Any) -> bool:
    """An object holding a request body (directly or as a captured HTTP exchange) under ``request``."""
    return isinstance(value, dict) and is_request_body(body_of(value.get("request")))


def looks_like(document: Any) -> bool:
    if isinstance(document, list):
        return bool(document) and all(is_call(x) for x in document)
    return is_call(document)


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    return bool(rows) and any(is_call(row) for _, row in rows[:3])


def load(path: Path, document: Any) -> list[Transcript]:
    entries = document if isinstance(document, list) else [document]
    return _load(path, [(f"call {i}" if len(entries) > 1 else "", e) for i, e in enumerate(entries)])


def load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    return _load(path, [(f"line {n}", row) for n, row in rows])


def _counts_tokens(entry: dict[str, Any]) -> bool:
    """A token-counting call (``/v1/messages/count_tokens``): it has messages but no reply."""
    request = entry["request"]
    url = request.get("url") if isinstance(request, dict) else None
    return isinstance(url, str) and "count_tokens" in url


def _load(path: Path, entries: list[tuple[str, Any]]) -> list[Transcript]:
    source = str(path)
    log = ImportLog(source)
    steps: list[Step] = []
    skipped = 0
    formats: set[str] = set()
    for where, entry in entries:
        if not is_call(entry) or _counts_tokens(entry):
            # Captures also log non-chat calls (token counting, telemetry): nothing to replay.
            skipped += 1
            continue
        request, response = entry["request"], entry.get("response")
        stamp = parse_time(request.get("timestamp") if isinstance(request, dict) else None)
        if stamp is None:
            stamp = parse_time(entry.get("logged_at") or entry.get("timestamp"))
        found = step(request, response, source, where or "call", log, stamp)
        captured = isinstance(request, dict) and "body" in request and ("url" in request or "headers" in request)
        formats.add("claude-trace" if captured else found.provider)
        steps.append(found)
    if not steps:
        raise TranscriptError(source, None, "no provider call with a 'messages' request body")
    source_format = formats.pop() if len(formats) == 1 else "request-log"
    metadata: dict[str, Any] = {"requests_in_file": len(steps)}
    if skipped:
        metadata["skipped_entries"] = skipped
    stem = path.name.split(".")[0]
    return rebuild(steps, source, stem, source_format, log, metadata)
