"""Probe targets: the things a request should still carry, found once per transcript.

A *target* is something the measurement layer checks for in every request: a gold or mined fact,
an identifier, an error fingerprint, a file of the artifact trail, a user instruction or
correction, or a user ask (the active task). Each has one or more literal *texts*; it is in context
when any of them occurs in the request payload (``docs/metrics.md`` §Targets). Extraction is
regular expressions over each transcript message once, plus one Aho-Corasick pass to find where
each target recurs later (its *uses*); the result is cached per transcript object.
"""

from __future__ import annotations

import dataclasses
import json
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import ahocorasick

from contextlab.engine import Message
from contextlab.measure.text import (
    constraint_sentences,
    error_lines,
    identifiers,
    message_payload,
    task_text,
)
from contextlab.messages import content_text, tool_calls
from contextlab.transcripts.model import Transcript

KINDS = ("fact", "identifier", "error", "artifact", "instruction", "task")
"""Target kinds, in the order their columns appear."""

_PATH_KEYS = ("path", "file", "file_path", "filename", "notebook_path", "target_file", "filepath")


@dataclass(frozen=True)
class Target:
    """One probe target.

    Attributes:
        kind: One of :data:`KINDS`.
        key: Unique within the kind (a fact id, the identifier, an error fingerprint, ``op:path``...).
        texts: Literal strings; the target is in context when any occurs in the request.
        message_index: Transcript index of the message that introduces it (eligible after it).
        origin: Role of that message (``user``, ``assistant``, ``tool``).
        category: Facts: ``recall`` / ``artifact`` / ``continuation`` / ``decision``; artifacts: the
            operation (``read``, ``edit``, ``create``, ``other``); instructions: ``instruction`` or
            ``correction``; otherwise the kind.
        uses: Later transcript indices where it is needed (gold ``fact_uses``, or later occurrences).
        source_call: ``tool_call_id`` of the tool result that carries it (what a re-fetch redoes).
        needed_later: A later step needs it (gold ``needed_later``; otherwise: it has uses).
    """

    kind: str
    key: str
    texts: tuple[str, ...]
    message_index: int
    origin: str
    category: str
    uses: tuple[int, ...] = ()
    source_call: str | None = None
    needed_later: bool = False


@dataclass(frozen=True)
class TargetSet:
    """All targets of one transcript, and where facts came from (``gold``, ``mined`` or ``none``)."""

    targets: tuple[Target, ...]
    facts_source: str
    uses_ready: bool = True
    """False until the uses of non-fact targets are known (see :func:`with_uses`)."""


_CACHE: dict[int, tuple[weakref.ReferenceType[Transcript], int, TargetSet]] = {}


def targets_for(transcript: Transcript) -> TargetSet:
    """The transcript's targets, computed once per transcript object (and message count)."""
    key = id(transcript)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is transcript and hit[1] == len(transcript.messages):
        return hit[2]
    found = build_targets(transcript)
    _CACHE[key] = (weakref.ref(transcript, _evict(key)), len(transcript.messages), found)
    return found


def _evict(key: int) -> Callable[[weakref.ReferenceType[Transcript]], None]:
    """A weakref callback that drops a collected transcript's entry (ids are reused)."""

    def evict(_ref: weakref.ReferenceType[Transcript]) -> None:
        _CACHE.pop(key, None)

    return evict


def build_targets(transcript: Transcript) -> TargetSet:
    """Extract every target of ``transcript`` (uncached; see :func:`targets_for`)."""
    messages = transcript.messages
    raw: list[Target] = []
    raw.extend(_identifier_targets(messages))
    raw.extend(_error_targets(messages))
    raw.extend(_artifact_targets(messages))
    raw.extend(_instruction_targets(messages))
    raw.extend(_task_targets(messages))
    if transcript.facts:
        # Uses of the other targets only rank compaction diffs: found on the first commit, if any.
        return TargetSet(tuple(_gold_facts(transcript) + raw), "gold", uses_ready=False)
    occurrences = _occurrences(messages, raw)
    with_found = [_with_uses(t, occurrences.get(i, ())) for i, t in enumerate(raw)]
    from contextlab.measure.mining import mine_facts

    facts = mine_facts(messages, with_found)
    return TargetSet(tuple(facts + with_found), "mined" if facts else "none")


def with_uses(transcript: Transcript, found: TargetSet) -> TargetSet:
    """``found`` with the uses of every non-fact target filled in (same order), cached."""
    if found.uses_ready:
        return found
    targets = list(found.targets)
    occurrences = _occurrences(transcript.messages, targets)
    done = TargetSet(tuple(_with_uses(t, occurrences.get(i, ())) for i, t in enumerate(targets)), found.facts_source)
    hit = _CACHE.get(id(transcript))
    if hit is not None and hit[0]() is transcript and hit[2] is found:
        _CACHE[id(transcript)] = (hit[0], hit[1], done)
    return done


def _origin(message: Message) -> str:
    role = message.get("role")
    return role if isinstance(role, str) else "user"


def _call_id(message: Message) -> str | None:
    value = message.get("tool_call_id")
    return value if message.get("role") == "tool" and isinstance(value, str) and value else None


def _gold_facts(transcript: Transcript) -> list[Target]:
    uses: dict[str, list[int]] = transcript.metadata.get("fact_uses") or {}
    out = []
    for fact in transcript.facts:
        index = fact.message_index
        message = transcript.messages[index] if 0 <= index < len(transcript.messages) else {}
        out.append(
            Target(
                "fact",
                fact.fact_id,
                (fact.text,),
                index,
                _origin(message),
                fact.category,
                tuple(sorted(int(u) for u in uses.get(fact.fact_id, []))),
                _call_id(message),
                fact.needed_later,
            )
        )
    return out


def _identifier_targets(messages: list[Message]) -> Iterator[Target]:
    seen: set[str] = set()
    for index, message in enumerate(messages):
        for token in identifiers(message_payload(message)):
            if token in seen:
                continue
            seen.add(token)
            yield Target(
                "identifier", token, (token,), index, _origin(message), "identifier", source_call=_call_id(message)
            )


def _error_targets(messages: list[Message]) -> Iterator[Target]:
    exemplars: dict[str, list[str]] = {}
    first: dict[str, tuple[int, Message]] = {}
    for index, message in enumerate(messages):
        if message.get("role") != "tool":
            continue
        for fingerprint, exemplar in error_lines(content_text(message)):
            found = exemplars.setdefault(fingerprint, [])
            first.setdefault(fingerprint, (index, message))
            if exemplar not in found and len(found) < 4:
                found.append(exemplar)
    for fingerprint, texts in exemplars.items():
        index, message = first[fingerprint]
        yield Target("error", fingerprint, tuple(texts), index, "tool", "error", source_call=_call_id(message))


def artifact_op(tool_name: str) -> str:
    """``read``, ``edit``, ``create`` or ``other`` for a tool name (``docs/metrics.md`` §Artifacts)."""
    name = tool_name.lower()
    if name in {"read", "view", "cat", "open"} or name.startswith(("read", "view", "open")):
        return "read"
    if any(w in name for w in ("write", "create", "new_file", "save")):
        return "create"
    if any(w in name for w in ("edit", "replace", "patch", "apply", "insert", "str_replace", "update")):
        return "edit"
    return "other"


def call_paths(call: dict[str, Any]) -> tuple[str, list[str]]:
    """(tool name, paths in its arguments) for one tool call."""
    raw_function = call.get("function")
    function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
    name = str(function.get("name") or call.get("name") or "")
    raw = function.get("arguments", call.get("arguments", ""))
    args: Any = raw
    if isinstance(raw, str):
        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError:
            args = {}
    paths: list[str] = []
    if isinstance(args, dict):
        for key in _PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and 2 <= len(value.strip()) <= 300:
                paths.append(value.strip())
        listed = args.get("paths")
        if isinstance(listed, list):
            paths.extend(p.strip() for p in listed if isinstance(p, str) and 2 <= len(p.strip()) <= 300)
    return name, paths


def _artifact_targets(messages: list[Message]) -> Iterator[Target]:
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for call in tool_calls(message):
            name, paths = call_paths(call)
            op = artifact_op(name)
            if op == "other":
                continue
            for path in paths:
                key = f"{op}:{path}"
                if key not in seen:
                    seen.add(key)
                    yield Target("artifact", key, (path,), index, "assistant", op)


def is_real_user(message: Message) -> bool:
    """A user message a person wrote (not a compaction summary the importer kept)."""
    return message.get("role") == "user" and message.get("display_kind") != "compact_summary"


def _instruction_targets(messages: list[Message]) -> Iterator[Target]:
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if not is_real_user(message):
            continue
        for sentence, category in constraint_sentences(content_text(message)):
            if sentence not in seen:
                seen.add(sentence)
                yield Target("instruction", sentence, (sentence,), index, "user", category)


def _task_targets(messages: list[Message]) -> Iterator[Target]:
    for index, message in enumerate(messages):
        if not is_real_user(message):
            continue
        text = task_text(content_text(message))
        if text:
            yield Target("task", f"u{index}", (text,), index, "user", "task")


def _occurrences(messages: list[Message], targets: list[Target]) -> dict[int, tuple[int, ...]]:
    """For every target, the later transcript indices whose payload contains one of its texts."""
    automaton = ahocorasick.Automaton()
    by_text: dict[str, list[int]] = {}
    for i, target in enumerate(targets):
        if target.kind in ("task", "instruction", "fact"):
            continue  # user asks are needed by the turn they open; facts carry their own uses
        for text in target.texts:
            by_text.setdefault(text, []).append(i)
    if not by_text:
        return {}
    for text, ids in by_text.items():
        automaton.add_word(text, tuple(ids))
    automaton.make_automaton()
    found: dict[int, list[int]] = {}
    for index, message in enumerate(messages):
        hits: set[int] = set()
        for _end, ids in automaton.iter(message_payload(message)):
            hits.update(ids)
        for i in hits:
            if index > targets[i].message_index:
                found.setdefault(i, []).append(index)
    return {i: tuple(v) for i, v in found.items()}


def _with_uses(target: Target, uses: tuple[int, ...]) -> Target:
    if not uses:
        return target
    return dataclasses.replace(target, uses=uses, needed_later=True)
