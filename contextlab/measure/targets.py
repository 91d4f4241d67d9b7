"""Probe targets: the things a request should still carry, found once per transcript.

A *target* is something the measurement layer checks for in every request: a gold or mined fact,
an identifier, an error fingerprint, a file of the artifact trail, a user instruction or
correction, or a user ask (the active task). Each has one or more literal *texts*; it is in context
when any of them occurs in the request payload (``docs/metrics.md`` §Targets). Extraction is
regular expressions over each transcript message once, plus one Aho-Corasick pass over each to find
where each target recurs later (its *uses*); the result, and that pass, are cached per transcript
object, and on disk by content (:mod:`~contextlab.measure.target_store`) for the next process.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, filterfalse, repeat
from typing import Any

from contextlab.engine import Message
from contextlab.measure import target_store
from contextlab.measure.scan import RowScans, TextIndex
from contextlab.measure.shell import command_artifacts, command_of, fenced_commands
from contextlab.measure.text import (
    constraint_sentences,
    error_lines,
    forget_identifiers,
    identifiers,
    is_continuation,
    message_payload,
    task_text,
)
from contextlab.messages import content_text, strip_surrogates, tool_calls, wire_message, without_surrogates
from contextlab.transcripts.model import FENCED_ACTIONS, Transcript, written_by_person

KINDS = ("fact", "identifier", "error", "artifact", "instruction", "task")
"""Target kinds, in the order their columns appear."""

_PATH_KEYS = ("path", "file", "file_path", "filename", "notebook_path", "target_file", "filepath")


@dataclass(frozen=True, slots=True)
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
    """False when only the facts' uses are filled in (gold facts carry their own; the uses of the
    other targets are then :attr:`RowScans.occurrences <contextlab.measure.scan.RowScans>`)."""


@dataclass
class _Entry:
    ref: weakref.ReferenceType[Transcript]
    n_messages: int
    found: TargetSet
    scans: RowScans


_CACHE: dict[int, _Entry] = {}


def targets_for(transcript: Transcript) -> TargetSet:
    """The transcript's targets, computed once per transcript object (and message count)."""
    return _entry(transcript).found


def fact_targets_for(transcript: Transcript) -> TargetSet:
    """The facts among :func:`targets_for`'s targets (what a facts-only probe reads). Gold facts are
    read from the transcript as they are, so a first sight extracts nothing else; mined facts come
    from the whole extraction."""
    if transcript.facts and _cached(transcript) is None:
        return TargetSet(tuple(_gold_facts(transcript)), "gold", uses_ready=False)
    found = targets_for(transcript)
    return TargetSet(tuple(t for t in found.targets if t.kind == "fact"), found.facts_source, found.uses_ready)


def scans_for(transcript: Transcript) -> RowScans:
    """Which of :func:`targets_for`'s targets each transcript row contains (computed with them)."""
    return _entry(transcript).scans


def _cached(transcript: Transcript) -> _Entry | None:
    """The transcript's entry when it is computed and still current (same object, same length)."""
    hit = _CACHE.get(id(transcript))
    if hit is not None and hit.ref() is transcript and hit.n_messages == len(transcript.messages):
        return hit
    return None


def _entry(transcript: Transcript) -> _Entry:
    hit = _cached(transcript)
    if hit is not None:
        return hit
    key = id(transcript)
    found, scans = _build(transcript)
    entry = _Entry(weakref.ref(transcript, _evict(key)), len(transcript.messages), found, scans)
    _CACHE[key] = entry
    return entry


def forget(transcript: Transcript) -> None:
    """Drop every cached result about ``transcript``: the next :func:`targets_for` extracts its
    targets as on first sight (benchmarks time that cold path)."""
    _CACHE.pop(id(transcript), None)
    forget_identifiers()


def _evict(key: int) -> Callable[[weakref.ReferenceType[Transcript]], None]:
    """A weakref callback that drops a collected transcript's entry (ids are reused)."""

    def evict(_ref: weakref.ReferenceType[Transcript]) -> None:
        _CACHE.pop(key, None)

    return evict


@dataclass(frozen=True)
class _Extracted:
    """What extraction finds; the scans are rebuilt from it in a few milliseconds (and it is what
    :mod:`~contextlab.measure.target_store` keeps on disk)."""

    found: TargetSet
    index_texts: tuple[str, ...]
    """Every text the scans look for, in automaton order (mining adds candidate decision sentences)."""
    row_ids: tuple[tuple[int, ...], ...] | None
    """Positions in :attr:`index_texts` found in each transcript row, when extraction scanned them."""
    index: TextIndex | None = dataclasses.field(default=None, compare=False)
    """The automaton extraction built over :attr:`index_texts` (reused by the scans; never stored)."""


def _build(transcript: Transcript) -> tuple[TargetSet, RowScans]:
    """The targets and where each occurs: read from the target store when this transcript was
    extracted before under the same rules, else extracted (and stored)."""
    # Each row's payload as a replay sends it (the wire form: string content stripped, tool-call
    # arguments as sorted-key JSON): the scans extraction stores then answer the rows a replay sends
    # without scanning them again.
    payloads = [message_payload(wire_message(m)) for m in transcript.messages]
    key = target_store.key_of(transcript)
    stored = target_store.load(key) if key is not None else None
    extracted = _decode(stored, len(payloads)) if stored is not None else None
    if extracted is None:
        extracted = _extract(transcript, payloads)
        if key is not None:
            target_store.save(key, _encode(extracted))
    index = extracted.index if extracted.index is not None else TextIndex(extracted.index_texts)
    scans = RowScans(index, [t.texts for t in extracted.found.targets], payloads)
    if extracted.row_ids is not None:
        scans.seed(extracted.row_ids)
    return extracted.found, scans


def _extract(transcript: Transcript, payloads: list[str]) -> _Extracted:
    """Every target of the transcript (``payloads``: its rows' payloads).

    Every row is scanned here (each distinct payload once): mining needs the uses, a compaction
    diff ranks its items by them, and the answers, stored with the targets, spare a later replay of
    the same file the scans of every row it sends in its wire form (a row the host or the engine
    sends otherwise, a merged or rewritten one, is scanned when sent).
    """
    # Texts as a request carries them (lone surrogates replaced, the wire form's rule): a target is
    # searched for in the rows as sent, and the automata take no unencodable text.
    messages = [without_surrogates(message) for message in transcript.messages]
    raw: list[Target] = []
    new_lines, new_output_lines = _new_lines(messages, payloads)
    raw.extend(_identifier_targets(messages, new_lines))
    raw.extend(_error_targets(messages, new_output_lines))
    raw.extend(_artifact_targets(messages, transcript.metadata.get("tool_calls") == FENCED_ACTIONS))
    raw.extend(_instruction_targets(messages))
    raw.extend(_task_targets(messages))
    if transcript.facts:
        # Uses of the other targets only rank compaction diffs: RowScans.occurrences, on demand.
        targets = _gold_facts(transcript) + raw
        texts = tuple(dict.fromkeys(text for t in targets for text in t.texts))
        index = TextIndex(texts)
        return _Extracted(
            TargetSet(tuple(targets), "gold", uses_ready=False), texts, _find_each(index, payloads), index
        )
    from contextlab.measure.mining import decision_candidates, mine_facts

    decisions = decision_candidates(messages)
    texts = tuple(dict.fromkeys([text for t in raw for text in t.texts] + [sentence for _index, sentence in decisions]))
    index = TextIndex(texts)
    row_ids = _find_each(index, payloads)
    # User asks are needed by the turn they open, so they (and instructions) get no uses.
    used = [() if t.kind in ("task", "instruction") else t.texts for t in raw]
    uses_scan = RowScans(index, used, payloads)
    uses_scan.seed(row_ids)
    occurrences = uses_scan.occurrences([t.message_index for t in raw])
    with_found = [_with_uses(t, occurrences.get(i, ())) for i, t in enumerate(raw)]
    facts = mine_facts(messages, with_found, decisions)
    targets = facts + with_found
    found = TargetSet(tuple(targets), "mined" if facts else "none")
    return _Extracted(found, texts, row_ids, index)


_TARGET_FIELDS = tuple(field.name for field in dataclasses.fields(Target))
_target_fields = operator.attrgetter(*_TARGET_FIELDS)


def _encode(extracted: _Extracted) -> dict[str, Any]:
    """``extracted`` as a JSON document (targets as field lists in :data:`_TARGET_FIELDS` order)."""
    found = extracted.found
    return {
        "fields": list(_TARGET_FIELDS),
        "facts_source": found.facts_source,
        "uses_ready": found.uses_ready,
        "targets": list(map(_target_fields, found.targets)),  # tuples: JSON arrays
        "index_texts": list(extracted.index_texts),
        "row_ids": None if extracted.row_ids is None else [list(ids) for ids in extracted.row_ids],
    }


def _decode(document: dict[str, Any], n_rows: int) -> _Extracted | None:
    """The document :func:`_encode` wrote, or None when it is not one (a damaged or foreign file:
    the targets are extracted again and the file replaced). Checked and built column by column, at
    C level: a long session has tens of thousands of targets."""
    try:
        if document["fields"] != list(_TARGET_FIELDS):
            return None
        rows = document["targets"]
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(_TARGET_FIELDS)
        kinds, keys, texts, indices, origins, categories, uses, calls, needed = columns
        index_texts = tuple(document["index_texts"])
        stored_rows = document["row_ids"]
        row_ids = None if stored_rows is None else tuple(map(tuple, stored_rows))
        facts_source, uses_ready = str(document["facts_source"]), bool(document["uses_ready"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (
        set(kinds) <= _KIND_SET
        and set(map(type, indices)) <= _INT
        and set(map(type, chain(index_texts, keys, *texts))) <= _STR
        and set(map(type, chain.from_iterable(uses))) <= _INT
    ):
        return None
    if row_ids is not None and (len(row_ids) != n_rows or not _positions_below(row_ids, len(index_texts))):
        return None
    if not set(chain.from_iterable(texts)) <= set(index_texts) | {""}:
        return None  # the scans could not place a target's text
    targets = _targets_of_columns(
        (kinds, keys, tuple(map(tuple, texts)), indices, origins, categories, tuple(map(tuple, uses)), calls, needed)
    )
    return _Extracted(TargetSet(targets, facts_source, uses_ready=uses_ready), index_texts, row_ids)


def _targets_of_columns(columns: tuple[tuple[Any, ...], ...]) -> tuple[Target, ...]:
    """Targets from their field columns (in :data:`_TARGET_FIELDS` order), each slot filled by its
    descriptor over a whole column at C level: a frozen dataclass's ``__init__`` sets its fields one
    ``object.__setattr__`` call at a time, 2.3 us a target, most of reading a stored document."""
    targets = tuple(map(object.__new__, repeat(Target, len(columns[0]))))
    for name, column in zip(_TARGET_FIELDS, columns, strict=True):
        deque(map(getattr(Target, name).__set__, targets, column), maxlen=0)  # run for its effect
    return targets


_KIND_SET = frozenset(KINDS)
_INT: frozenset[type] = frozenset({int})
_STR: frozenset[type] = frozenset({str})


def _positions_below(row_ids: tuple[tuple[int, ...], ...], n_texts: int) -> bool:
    """Whether every stored row position names one of the ``n_texts`` automaton texts."""
    flat = list(chain.from_iterable(row_ids))
    return set(map(type, flat)) <= _INT and (not flat or (min(flat) >= 0 and max(flat) < n_texts))


def _find_each(index: TextIndex, payloads: list[str]) -> tuple[tuple[int, ...], ...]:
    """``index.find`` of every payload as sorted text positions (the stored form), each distinct
    payload scanned once."""
    done: dict[str, tuple[int, ...]] = {}
    out = []
    for payload in payloads:
        found = done.get(payload)
        if found is None:
            found = done[payload] = tuple(sorted(index.find(payload)))
        out.append(found)
    return tuple(out)


def is_tool_output(message: Message) -> bool:
    """A tool result, or an environment's output sent as a user row (``display_kind`` observation:
    mini-swe-agent, SWE-agent without function calling)."""
    return message.get("role") == "tool" or message.get("display_kind") == "observation"


def _origin(message: Message) -> str:
    if is_tool_output(message):
        return "tool"
    role = message.get("role")
    return role if isinstance(role, str) else "user"


def _call_id(message: Message, index: int) -> str | None:
    """What a re-fetch redoes: the tool call a result answers, or the action an observation row
    answers (named by the row's transcript index: one observation, one command run)."""
    if message.get("display_kind") == "observation":
        return f"observation@{index}"
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
                (strip_surrogates(fact.text),),
                index,
                _origin(message),
                fact.category,
                tuple(sorted(int(u) for u in uses.get(fact.fact_id, []))),
                _call_id(message, index),
                fact.needed_later,
            )
        )
    return out


_NewText = tuple[int, str]
"""A row's index and the text of its lines not seen before (:func:`_new_lines`)."""


def _new_lines(messages: list[Message], payloads: list[str]) -> tuple[list[_NewText], list[_NewText]]:
    """The lines of each row that no earlier row had, for the identifier pass, and those of each tool
    output that no earlier tool output had (and maybe some it had), for the error pass, as ``(row
    index, lines joined)`` in row order (rows without such lines left out).

    Neither an identifier nor an error line spans a line, and a line seen before gives nothing not
    already found (a session reads the same files again and again, with a few lines changed: on
    `coding-agent` 1.7 of 3.9 MB are new lines). Splitting and hashing the lines is most of the cost
    of finding them, so both passes take them from one split of each payload: a tool output's new
    lines are the row's, unless it holds a line of a row that is not a tool output."""
    seen: set[str] = set()  # every line of the rows so far
    # Lines of other rows that may be in no tool output yet: a superset of those, since reading a
    # line again finds no new error (see _error_targets) but a line never read is an error missed.
    unread: set[str] = set()
    done: set[str] = set()
    done_output: set[str] = set()
    new: list[_NewText] = []
    new_output: list[_NewText] = []
    for index, (message, payload) in enumerate(zip(messages, payloads, strict=True)):
        lines: list[str] | None = None
        fresh: list[str] = []
        if payload not in done:  # a repeated payload (a file read twice) has no line not seen
            done.add(payload)
            lines = payload.split("\n")
            fresh = list(filterfalse(seen.__contains__, lines))
            if fresh:
                seen.update(fresh)
                new.append((index, payload if len(fresh) == len(lines) else "\n".join(fresh)))
        output = _output_text(message, payload) if is_tool_output(message) else None
        if output is not payload:
            unread.update(fresh)  # not read as a tool output's lines
        if output is None or output in done_output:
            continue
        done_output.add(output)
        if output is payload and lines is not None and unread.isdisjoint(lines):
            if fresh:  # the common case: the lines new to the row are the ones to read
                new_output.append((index, new[-1][1]))
            continue
        _add_unread(index, output, lines if output is payload else None, (seen, unread, set(fresh)), new_output)
    return new, new_output


def _add_unread(
    index: int,
    output: str,
    lines: list[str] | None,
    sets: tuple[set[str], set[str], set[str]],
    out: list[_NewText],
) -> None:
    """Append ``(index, the lines of output the error pass may not have read)`` to ``out``: those of
    no earlier row or of the other rows' unread ones (``sets``: the lines seen, the unread ones and
    the row's own new ones, already added to the seen ones); they are read now. ``lines``: the
    output split into lines, when it is."""
    seen, unread, fresh = sets
    lines = output.split("\n") if lines is None else lines
    # A line is new to the earlier rows when it is not seen or came with this row.
    wanted = [line for line in lines if line in unread or line in fresh or line not in seen]
    unread.difference_update(lines)
    if wanted:
        out.append((index, output if len(wanted) == len(lines) else "\n".join(wanted)))


def _output_text(message: Message, payload: str) -> str:
    """The text the error pass reads for a tool output: its payload, split into lines already, when
    that is its content with the outer whitespace stripped (the wire form; no error line changes
    with the blanks around it: the rules read a line with ``\\s*`` and word boundaries), else its
    content (text the host sends in place of it, ``api_content``)."""
    text = content_text(message)
    return payload if payload is text or payload == text.strip() else text


def _identifier_targets(messages: list[Message], new_lines: list[_NewText]) -> Iterator[Target]:
    """The identifiers of the rows' new lines (:func:`_new_lines`), each at its first row."""
    seen: set[str] = set()
    for index, text in new_lines:
        # identifiers() gives each token once: the new ones are filtered at C speed.
        new = list(filterfalse(seen.__contains__, identifiers(text)))
        if not new:
            continue
        seen.update(new)
        message = messages[index]
        origin, call = _origin(message), _call_id(message, index)
        for token in new:
            yield Target("identifier", token, (token,), index, origin, "identifier", source_call=call)


def _error_targets(messages: list[Message], new_output_lines: list[_NewText]) -> Iterator[Target]:
    """The error lines of the tool outputs' new lines (:func:`_new_lines`): one target per fingerprint,
    at its first row, with up to four distinct exemplars (a line seen again repeats a fingerprint and
    an exemplar already recorded)."""
    exemplars: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    for index, text in new_output_lines:
        for fingerprint, exemplar in error_lines(text):
            found = exemplars.setdefault(fingerprint, [])
            first.setdefault(fingerprint, index)
            if exemplar not in found and len(found) < 4:
                found.append(exemplar)
    for fingerprint, texts in exemplars.items():
        index = first[fingerprint]
        call = _call_id(messages[index], index)
        yield Target("error", fingerprint, tuple(texts), index, "tool", "error", source_call=call)


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


def _call_parts(call: dict[str, Any]) -> tuple[str, Any]:
    """(tool name, raw arguments: usually a JSON string) of one tool call."""
    raw_function = call.get("function")
    function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
    name = str(function.get("name") or call.get("name") or "")
    return name, function.get("arguments", call.get("arguments", ""))


def _parsed(raw: Any) -> Any:
    """Arguments decoded, as a request carries them (a lone surrogate escaped in the JSON is U+FFFD)."""
    if isinstance(raw, str):
        try:
            return without_surrogates(json.loads(raw)) if raw.strip() else {}
        except (ValueError, RecursionError):
            return {}
    return raw


def call_arguments(call: dict[str, Any]) -> tuple[str, Any]:
    """(tool name, parsed arguments; ``{}`` when they are not JSON) of one tool call."""
    name, raw = _call_parts(call)
    return name, _parsed(raw)


def _argument_paths(args: Any) -> list[str]:
    paths: list[str] = []
    if isinstance(args, dict):
        for key in _PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and 2 <= len(value.strip()) <= 300:
                paths.append(value.strip())
        listed = args.get("paths")
        if isinstance(listed, list):
            paths.extend(p.strip() for p in listed if isinstance(p, str) and 2 <= len(p.strip()) <= 300)
    return paths


def call_paths(call: dict[str, Any]) -> tuple[str, list[str]]:
    """(tool name, paths in its arguments) for one tool call."""
    name, args = call_arguments(call)
    return name, _argument_paths(args)


def call_artifacts(call: dict[str, Any]) -> list[tuple[str, str]]:
    """``(op, path)`` for the files one tool call reads, edits or creates: path arguments by the
    tool's name, and the file operands of a shell command (:mod:`contextlab.measure.shell`)."""
    return _artifacts_of(*call_arguments(call))


def _artifacts_of(name: str, args: Any) -> list[tuple[str, str]]:
    op = artifact_op(name)
    found = [] if op == "other" else [(op, path) for path in _argument_paths(args)]
    command = command_of(args)
    if command is not None:
        found.extend(command_artifacts(command))
    return found


def _artifact_targets(messages: list[Message], fenced_actions: bool) -> Iterator[Target]:
    """Artifacts of assistant tool calls, and of the fenced shell blocks of assistant messages when
    the agent acts through them instead of tool calls (``fenced_actions``: mini-swe-agent)."""
    seen: set[str] = set()
    # A call's artifacts depend on its name and argument string only: an agent repeats the same
    # reads and commands (and a repeated session all of them), each parsed and split once.
    by_call: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        found: list[tuple[str, str]] = []
        for call in tool_calls(message):
            name, raw = _call_parts(call)
            if not isinstance(raw, str):
                found.extend(_artifacts_of(name, raw))
                continue
            known = by_call.get((name, raw))
            if known is None:
                known = by_call[name, raw] = _artifacts_of(name, _parsed(raw))
            found.extend(known)
        if fenced_actions:
            for command in fenced_commands(content_text(message)):
                found.extend(command_artifacts(command))
        for op, path in found:
            key = f"{op}:{path}"
            if key not in seen:
                seen.add(key)
                yield Target("artifact", key, (path,), index, "assistant", op)


def is_real_user(message: Message) -> bool:
    """A user message a person wrote (not a summary, notice or command output the harness added)."""
    return written_by_person(message)


def _instruction_targets(messages: list[Message]) -> Iterator[Target]:
    seen: set[str] = set()
    done: set[str] = set()
    for index, message in enumerate(messages):
        if not is_real_user(message):
            continue
        text = content_text(message)
        if text in done:
            continue  # a repeated message has no sentence not already seen
        done.add(text)
        for sentence, category in constraint_sentences(text):
            if sentence not in seen:
                seen.add(sentence)
                yield Target("instruction", sentence, (sentence,), index, "user", category)


def _task_targets(messages: list[Message]) -> Iterator[Target]:
    """The user asks: every real user message but a continuation of the ask before it
    (:func:`~contextlab.measure.text.is_continuation`; the first ask always counts)."""
    asked = False
    agent_asked = False  # the agent's last words (its latest text) were a question
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            said = content_text(message).strip()
            if said:
                agent_asked = said.endswith("?")
            continue
        if not is_real_user(message):
            continue
        content = content_text(message)
        if asked and is_continuation(content, agent_asked):
            continue
        text = task_text(content)
        if text:
            asked = True
            yield Target("task", f"u{index}", (text,), index, "user", "task")


def _with_uses(target: Target, uses: tuple[int, ...]) -> Target:
    if not uses:
        return target
    return dataclasses.replace(target, uses=uses, needed_later=True)
