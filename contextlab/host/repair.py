"""The host's repair of its own history before each request: argument JSON, then role alternation.

Before building every request the host rewrites its *persisted* history in place, in two steps
(``docs/host-loop.md``, *History repair*; PyPI hermes-agent 0.19.0 and NousResearch
``agent/agent_runtime_helpers.py`` @``0009407f``, called from ``agent/conversation_loop.py``):

1. **Tool-call arguments** (``sanitize_tool_call_arguments``): an empty or blank argument string
   becomes ``{}``; one that is not JSON becomes ``{}`` too, and the call's result in the tool run
   right after it gets the corruption marker in front (a result holding only the marker is added
   when there is none).
2. **Role alternation** (``repair_message_sequence``), three passes over the whole list: adjacent
   assistant rows become one (tool calls joined, texts joined with a newline, the first
   ``reasoning_content`` kept; Codex interim turns are never merged and a superseded verification
   candidate is replaced); a tool row that answers no call of the assistant row before it (or
   answers one a second time, or follows a user row) is dropped; adjacent user rows with text
   content become one (``\\n\\n`` between non-empty sides, ``api_content`` dropped).

The passes run once per request, so a repair can leave work for the next one (a dropped result
that stood between two assistant rows makes them adjacent after pass 0 has run): the next
request repairs again, as the host does.

These functions never change a row they are given: a row they change is a new dict, and a row they
keep is the very object, so the history keeps its per-row results for every row left alone.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextlab.engine import Message
from contextlab.tool_arguments import EMPTY_ARGUMENTS

_CODEX_ITEMS = ("codex_reasoning_items", "codex_message_items")
_SUPERSEDED = frozenset({"verification_required", "verify_hook_continue"})


@dataclass(frozen=True)
class Repair:
    """What one repair changed. ``repairs`` is the host's own count (it logs it)."""

    rows: list[Message]
    arguments: int = 0
    """Tool calls whose arguments were not JSON (``{}`` written, the marker placed)."""
    blank_arguments: int = 0
    """Tool calls whose empty or blank arguments became ``{}`` (the host does not count these)."""
    merged_assistants: int = 0
    dropped_results: int = 0
    merged_users: int = 0
    first_changed: int = -1
    """Index of the first row that is not the row at that index before (-1: nothing changed)."""

    @property
    def repairs(self) -> int:
        return self.arguments + self.merged_assistants + self.dropped_results + self.merged_users

    @property
    def changed(self) -> bool:
        return self.first_changed >= 0


def repair_history(rows: Sequence[Message], marker: str, start: int = 0) -> Repair:
    """``rows`` as the host repairs them before a request (both steps, in the host's order).

    ``start``: walk only ``rows[start:]``, the rows before it kept as they are. Exact when nothing
    before ``start`` needs repair and ``rows[start]`` is a user or assistant row (every pass starts
    afresh there: :attr:`RepairWatch.resume_at`).
    """
    tail = rows[start:]
    out = list(tail)
    arguments, blank = _sanitize_arguments(out, marker)
    out, merged_assistants = _merge_adjacent_assistants(out)
    out, dropped = _drop_stray_results(out)
    out, merged_users = _merge_adjacent_users(out)
    first = next((i for i, (a, b) in enumerate(zip(tail, out, strict=False)) if a is not b), -1)
    if first < 0 and len(out) != len(tail):
        first = min(len(out), len(tail))
    return Repair(
        [*rows[:start], *out],
        arguments,
        blank,
        merged_assistants,
        dropped,
        merged_users,
        first + start if first >= 0 else -1,
    )


class RepairWatch:
    """Says, row by row as a history grows, whether :func:`repair_history` would change it.

    Exact, not a heuristic: the host's passes change a history only where the history itself shows
    one of the shapes watched for (each pass sees the list before it unchanged when the passes
    before it changed nothing), so a clean watch lets the host skip the O(n) repair.
    """

    __slots__ = (
        "_anchor",
        "_fed",
        "_known",
        "_previous_interim",
        "_previous_role",
        "_previous_user_text",
        "dirty",
        "resume_at",
    )

    def __init__(self) -> None:
        self.dirty = False
        self.resume_at = 0
        """Where a repair may start: the newest user or assistant row before the first row that
        made the watch dirty (every pass starts afresh at such a row, and nothing before it needs
        repair)."""
        self._fed = 0
        self._anchor = 0  # index of the newest user or assistant row fed
        self._known: set[Any] = set()
        self._previous_role: object = None
        self._previous_interim = False
        self._previous_user_text = False

    @classmethod
    def resumed(cls, rows: Sequence[Message], start: int) -> RepairWatch:
        """A watch that has seen ``rows[:start]``, none of which needs repair, and ``rows[start]``
        is a user or assistant row (so the state it carries in is only the row before it)."""
        watch = cls()
        watch._fed = watch._anchor = start
        if start:
            previous = rows[start - 1]
            watch._previous_role = role = previous.get("role")
            watch._previous_interim = role == "assistant" and _is_codex_interim(previous)
            watch._previous_user_text = role == "user" and isinstance(previous.get("content", ""), str)
        return watch

    def feed(self, row: Message) -> None:
        role = row.get("role")
        dirty = False
        if role == "assistant":
            interim = _is_codex_interim(row)
            if self._previous_role == "assistant" and not interim and not self._previous_interim:
                dirty = True
            self._known = set()
            calls = row.get("tool_calls")
            for call in calls or ():
                if isinstance(call, dict):
                    if _arguments_need_repair(call):
                        dirty = True
                    self._known.update(v for v in (call.get("id"), call.get("call_id")) if v)
            self._previous_interim = interim
        elif role == "tool":
            call_id = row.get("tool_call_id")
            if call_id and call_id in self._known:
                self._known.discard(call_id)
            else:
                dirty = True
        elif role == "user":
            self._known = set()
            user_text = isinstance(row.get("content", ""), str)
            if user_text and self._previous_role == "user" and self._previous_user_text:
                dirty = True
            self._previous_user_text = user_text
        if dirty and not self.dirty:
            self.dirty = True
            # The newest user or assistant row before this one: a merge folds into it at the latest.
            self.resume_at = self._anchor
        if role in ("user", "assistant"):
            self._anchor = self._fed
        self._previous_role = role
        self._fed += 1


def _is_codex_interim(row: Message) -> bool:
    return bool(row.get(_CODEX_ITEMS[0]) or row.get(_CODEX_ITEMS[1]) or row.get("finish_reason") == "incomplete")


def _arguments_need_repair(call: dict[str, Any]) -> bool:
    function = call.get("function")
    if not isinstance(function, dict):
        return False
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        return True
    return isinstance(arguments, str) and (not arguments.strip() or not _is_json(arguments))


@functools.lru_cache(maxsize=4096)  # the watch asks per appended call; arguments recur (a file read again)
def _is_json(text: str) -> bool:
    # RecursionError is not caught: the host does not catch it either (its request would fail).
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _call_id(call: dict[str, Any]) -> str | None:
    """The host's id of a call: ``call_id`` before ``id``, stripped (None when both are empty)."""
    return str(call.get("call_id", "") or call.get("id", "") or "").strip() or None


def _sanitize_arguments(rows: list[Message], marker: str) -> tuple[int, int]:
    """Step 1, in place on the list (rows it changes are replaced by copies); returns the repaired
    and the blanked counts."""
    repaired = blanked = 0
    i = 0
    while i < len(rows):
        row = rows[i]
        calls = row.get("tool_calls") if row.get("role") == "assistant" else None
        if not isinstance(calls, list) or not calls:
            i += 1
            continue
        insert_at = i + 1
        for k, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            if isinstance(arguments, str) and arguments.strip() and _is_json(arguments):
                continue
            if arguments is not None and not isinstance(arguments, str):
                continue
            rows[i] = _with_empty_arguments(rows[i], k)
            if arguments is None or not arguments.strip():
                blanked += 1
                continue
            repaired += 1
            call_id = _call_id(call)
            j = i + 1
            while j < len(rows) and rows[j].get("role") == "tool" and rows[j].get("tool_call_id") != call_id:
                j += 1
            if j < len(rows) and rows[j].get("role") == "tool":
                rows[j] = _marked(rows[j], marker)
            else:
                name = function.get("name", "?")
                name = "" if name == "?" else name
                rows.insert(
                    insert_at,
                    {"role": "tool", "name": name, "tool_name": name, "content": marker, "tool_call_id": call_id},
                )
                insert_at += 1
        i += 1
    return repaired, blanked


def _with_empty_arguments(row: Message, k: int) -> Message:
    """A copy of ``row`` whose ``k``-th call has ``{}`` arguments (the other calls shared)."""
    calls = list(row["tool_calls"])
    call = dict(calls[k])
    call["function"] = {**call["function"], "arguments": EMPTY_ARGUMENTS}
    calls[k] = call
    return {**row, "tool_calls": calls}


def _marked(result: Message, marker: str) -> Message:
    """``result`` with the corruption marker in front of its content (once)."""
    content = result.get("content")
    if isinstance(content, str):
        if content.startswith(marker):
            return result
        text = f"{marker}\n{content}" if content else marker
    elif content is None:
        text = marker
    else:
        try:
            text = f"{marker}\n{json.dumps(content)}"
        except TypeError:
            text = f"{marker}\n{content}"
    return {**result, "content": text}


def _merge_adjacent_assistants(rows: list[Message]) -> tuple[list[Message], int]:
    """Pass 0: adjacent assistant rows become one (Codex interims exempt)."""
    out: list[Message] = []
    merges = 0
    own: set[int] = set()  # ids of merged copies made here (changed again in place)
    for row in rows:
        previous = out[-1] if out else None
        if (
            previous is None
            or row.get("role") != "assistant"
            or previous.get("role") != "assistant"
            or _is_codex_interim(row)
            or _is_codex_interim(previous)
        ):
            out.append(row)
            continue
        merges += 1
        if previous.get("finish_reason") in _SUPERSEDED:
            out[-1] = row  # the later response supersedes a provisional candidate
            continue
        if id(previous) not in own:
            previous = out[-1] = dict(previous)
            own.add(id(previous))
        _fold_assistant(previous, row)
    return out, merges


def _fold_assistant(into: Message, row: Message) -> None:
    earlier_calls = list(into.get("tool_calls") or [])
    later_calls = list(row.get("tool_calls") or [])
    if later_calls:
        into["tool_calls"] = earlier_calls + later_calls
        # contextlab's own bookkeeping: the absorbed calls keep the uids they were stamped with.
        later_uids = row.get("_tool_call_uids")
        if isinstance(later_uids, dict) and later_uids:
            earlier_uids = into.get("_tool_call_uids")
            into["_tool_call_uids"] = {**later_uids, **(earlier_uids if isinstance(earlier_uids, dict) else {})}
    elif earlier_calls:
        into["tool_calls"] = earlier_calls
    earlier, later = into.get("content"), row.get("content")
    if isinstance(earlier, str) and isinstance(later, str):
        into["content"] = "\n".join(p for p in (earlier.strip(), later.strip()) if p)
    elif not earlier and later is not None:
        into["content"] = later
    if not into.get("reasoning_content") and row.get("reasoning_content"):
        into["reasoning_content"] = row["reasoning_content"]


def _drop_stray_results(rows: list[Message]) -> tuple[list[Message], int]:
    """Pass 1: a tool row must answer a call of the assistant row before it, once, with no user
    row between."""
    out: list[Message] = []
    dropped = 0
    known: set[Any] = set()
    for row in rows:
        role = row.get("role")
        if role == "assistant":
            known = set()
            for call in row.get("tool_calls") or ():
                if isinstance(call, dict):
                    known.update(v for v in (call.get("id"), call.get("call_id")) if v)
        elif role == "tool":
            call_id = row.get("tool_call_id")
            if not (call_id and call_id in known):
                dropped += 1
                continue
            known.discard(call_id)  # a second result for the same call is dropped
        elif role == "user":
            known = set()
        out.append(row)
    return out, dropped


def _merge_adjacent_users(rows: list[Message]) -> tuple[list[Message], int]:
    """Pass 2: adjacent user rows with text content become one."""
    out: list[Message] = []
    merges = 0
    own: set[int] = set()
    for row in rows:
        previous = out[-1] if out else None
        if previous is not None and row.get("role") == "user" and previous.get("role") == "user":
            earlier, later = previous.get("content", ""), row.get("content", "")
            if isinstance(earlier, str) and isinstance(later, str):
                if id(previous) not in own:
                    previous = out[-1] = dict(previous)
                    own.add(id(previous))
                previous["content"] = f"{earlier}\n\n{later}" if earlier and later else (earlier or later)
                previous.pop("api_content", None)  # the bytes sent before the merge are stale
                merges += 1
                continue
        out.append(row)
    return out, merges
