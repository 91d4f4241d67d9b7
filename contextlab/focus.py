"""Focus topics: suggestions mined from a transcript, and a "compress now" preview of what an engine
keeps and drops for a topic. Pure functions over the library (the dashboard is a thin layer on them).
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextlab.engine import Message
from contextlab.engines import EngineSpec
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.host.turns import plan_turns
from contextlab.messages import clone_messages, content_text
from contextlab.plugins import resolve_engine
from contextlab.tokens import RoughCounter
from contextlab.transcripts import Transcript

# Things a person would ask to keep: file paths, dotted or snake/camel identifiers, error names,
# ticket-like ids. Plain words are left out: they make poor focus topics.
_CANDIDATE = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.\w{1,6}"  # a path with a folder and an extension
    r"|\b[\w-]+\.(?:py|ts|js|go|rs|java|md|yaml|yml|json|toml|sql|sh|c|cpp|h)\b"  # a file name
    r"|\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\b"  # CamelCase
    r"|\b[a-z][a-z0-9]+(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b[A-Z]{2,}-\d+\b"  # TICKET-123
)


def suggest_focus_topics(transcript: Transcript, limit: int = 8) -> list[str]:
    """Focus-topic suggestions: distinctive names the conversation keeps coming back to.

    A candidate (file path, identifier, error name, ticket id) mentioned in at least two messages is
    scored by how many messages mention it, user messages counting double; ties go to the first
    seen. Deterministic.
    """
    score: Counter[str] = Counter()
    messages_with: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for index, message in enumerate(transcript.messages):
        text = content_text(message)
        if not text:
            continue
        weight = 2 if message.get("role") == "user" else 1
        for found in set(_CANDIDATE.findall(text)):
            score[found] += weight
            messages_with[found] += 1
            first_seen.setdefault(found, index)
    ranked = sorted((t for t in score if messages_with[t] >= 2), key=lambda t: (-score[t], first_seen[t]))
    return ranked[:limit]


@dataclass(frozen=True)
class PreviewRow:
    """One message of the preview: where it was, what became of it, and its first words."""

    index: int
    role: str
    tokens: int
    status: str
    """``kept`` (in the result unchanged), ``dropped``, or ``added`` (new in the result: a summary)."""
    text: str


@dataclass(frozen=True)
class CompressPreview:
    """What ``engine.compress(history, focus_topic=focus)`` did to the history before ``turn``."""

    engine: str
    turn: int
    focus: str
    tokens_before: int
    tokens_after: int
    rows: list[PreviewRow]
    note: str = ""

    def of(self, status: str) -> list[PreviewRow]:
        """The rows with this status."""
        return [r for r in self.rows if r.status == status]


def history_before_turn(transcript: Transcript, turn: int) -> list[Message]:
    """The recorded messages before turn ``turn`` starts (the whole conversation past the last turn)."""
    turns = plan_turns(transcript.messages)
    if not turns:
        raise ConfigError(f"{transcript.transcript_id}: the transcript has no turns")
    if turn < 0 or turn >= len(turns):
        raise ConfigError(f"turn {turn}: {transcript.transcript_id} has turns 0..{len(turns) - 1}")
    first = min((*turns[turn].lead_indices, *(s.assistant_index for s in turns[turn].steps[:1])), default=0)
    return clone_messages(transcript.messages[:first])


def compress_preview(
    transcript: Transcript,
    engine: EngineSpec,
    settings: HostSettings | None = None,
    *,
    turn: int,
    focus: str,
    params: Mapping[str, Any] | None = None,
) -> CompressPreview:
    """Run one forced ``compress`` with a focus topic on the recorded history before ``turn``.

    The history is the recording as is (no earlier compaction applied), so the preview shows what
    the engine keeps of the full conversation for that topic. The engine is set up as the host does
    (``threshold_percent`` then ``update_model``); ``compress`` gets only the keyword arguments its
    signature accepts.
    """
    settings = settings or HostSettings()
    instance = resolve_engine(engine, params)
    if settings.threshold_percent is not None:
        instance.threshold_percent = settings.threshold_percent
    model = settings.model or transcript.model or "gpt-4o"
    instance.update_model(model, settings.context_length, settings.base_url, "", settings.provider, "")
    history = history_before_turn(transcript, turn)
    counter = RoughCounter()
    before = counter.messages(history)
    offered: dict[str, Any] = {"current_tokens": before, "focus_topic": focus or None, "force": True}
    accepted = inspect.signature(instance.compress).parameters
    kwargs = {k: v for k, v in offered.items() if k in accepted}
    result = instance.compress(clone_messages(history), **kwargs)
    if result is None or not isinstance(result, list):
        raise ConfigError(f"{instance.name}.compress returned {type(result).__name__}, not a list")
    rows = _diff(history, result, counter)
    note = "the engine changed nothing" if all(r.status == "kept" for r in rows) else ""
    return CompressPreview(str(instance.name), turn, focus, before, counter.messages(result), rows, note)


def _key(message: Message) -> str:
    return json.dumps(message, sort_keys=True, default=str)


def _diff(before: list[Message], after: list[Message], counter: RoughCounter) -> list[PreviewRow]:
    """Rows in result order (kept and added), then the dropped ones in their original order."""
    remaining: dict[str, list[int]] = {}
    for index, message in enumerate(before):
        remaining.setdefault(_key(message), []).append(index)
    rows: list[PreviewRow] = []
    used: set[int] = set()
    for message in after:
        slots = remaining.get(_key(message))
        if slots:
            index = slots.pop(0)
            used.add(index)
            rows.append(_row(index, message, "kept", counter))
        else:
            rows.append(_row(-1, message, "added", counter))
    rows.extend(_row(i, m, "dropped", counter) for i, m in enumerate(before) if i not in used)
    return rows


def _row(index: int, message: Message, status: str, counter: RoughCounter) -> PreviewRow:
    text = " ".join(content_text(message).split())
    return PreviewRow(index, str(message.get("role", "?")), counter.message(message), status, text[:160])
