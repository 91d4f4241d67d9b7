"""What a transcript file holds, without replaying it: one row per conversation (format, messages,
requests, content tokens, recorded usage, compactions, facts, warnings and structural violations)."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

from contextlab.messages import wire_message
from contextlab.transcripts.issues import WARNINGS_KEY, TranscriptWarning
from contextlab.transcripts.model import Transcript


def describe_file(path: str | Path, encoding: str = "cl100k_base") -> tuple[list[dict[str, Any]], float, int]:
    """(one row per conversation, load seconds, warnings raised) for ``path``.

    Token counts are exact (``encoding``) for the messages as the provider would see them; the system
    prompt and tool schemas, when the file has them, are counted apart.
    """
    from contextlab.tokens import ExactCounter
    from contextlab.transcripts import VIOLATIONS_KEY, load_transcripts

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TranscriptWarning)
        started = time.perf_counter()
        found = load_transcripts(path)
        seconds = time.perf_counter() - started
    for item in caught:  # counted here, and passed on to whoever prints them (the CLI)
        warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    counter = ExactCounter(encoding)
    rows = [describe(t, counter, VIOLATIONS_KEY) for t in found]
    return rows, seconds, sum(1 for w in caught if issubclass(w.category, TranscriptWarning))


def describe(transcript: Transcript, counter: Any, violations_key: str = "structural_violations") -> dict[str, Any]:
    """The inspection row of one conversation."""
    tokens = sum(counter.message(wire_message(m)) for m in transcript.messages)
    usage = transcript.usage.values()
    return {
        "conversation": transcript.transcript_id,
        "format": transcript.source_format,
        "model": transcript.model or "",
        "messages": len(transcript.messages),
        "requests": transcript.n_requests,
        "tokens": tokens,
        "system_tokens": counter.text(transcript.system_prompt or ""),
        "tools": len(transcript.tools),
        "recorded_usage": len(transcript.usage),
        "recorded_prompt_max": max((u.prompt_tokens for u in usage), default=0),
        "recorded_cache_read": sum(u.cache_read_tokens for u in usage),
        "compactions": len(transcript.events),
        "facts": len(transcript.facts),
        "warnings": len(transcript.metadata.get(WARNINGS_KEY) or []),
        "violations": len(transcript.metadata.get(violations_key) or []),
    }
