"""The structure pass over ``select_context`` results, resumed where a result first differs from the
previous one (``docs/performance.md``, "Engine hooks").

A selection whose structure differs from the unselected request (markers, dropped groups) is checked
by feeding every row to a :class:`~contextlab.messages.StructureTracker`. Consecutive selections
usually share a leading run of rows (the head, the groups kept since), so the tracker's state is
saved every :data:`EVERY` rows and the next selection is fed from the last saved state at or before
its first changed row. Rows are compared through their structure signatures (the host reuses a
row's signature object exactly while the row is known unchanged), so a shared run is one C-level
identity scan. The result always equals a tracker fed the whole selection (tested).

Most selections are clean (every call answered in order by the tool rows right after it, no empty
rows, no adjacent user texts). :meth:`SelectionStructure.outcome` recognises those from precomputed
parts of the signatures in a few C-level passes, so a clean selection costs no Python work per row
however many rows moved; only a selection that may break a rule is fed to a tracker.
"""

from __future__ import annotations

from itertools import chain, compress
from operator import and_, is_not, itemgetter
from typing import Any

from contextlab.engine import Message
from contextlab.messages import ROLES, StructureTracker, Violation, is_empty, tool_calls

EVERY = 16
"""Rows between saved tracker states (a save copies the tracker's containers, C-level)."""


_HEAD = object()
"""Stands for a non-tool row (a group's head) in the clean check's call/answer sequences."""

_EXPECTS, _ANSWERS, _PLAIN, _USER_TEXT = 6, 7, 8, 9
"""Where the clean check's parts sit in a structure signature."""


def structure_signature(message: Message) -> tuple[Any, ...]:
    """Everything about a row the structure rules and the sanitizers' skip decision depend on: role,
    ``tool_call_id``, call ids, string content, empty, reasoning; then the parts :func:`_clean`
    reads (computed once per row, so the check over a selection is C-level)."""
    role = message.get("role")
    call_id = message.get("tool_call_id")
    calls = tuple(str(c.get("id") or "") for c in tool_calls(message))
    is_str = isinstance(message.get("content"), str)
    empty = is_empty(message)
    reasoning = bool(message.get("reasoning") or message.get("reasoning_content"))
    known_role = isinstance(role, str) and role in ROLES
    if role == "tool":
        expects: tuple[Any, ...] = ()
        answers: tuple[Any, ...] = (call_id,)
        plain = True  # a tool row's rules are all about the calls it answers (the sequences)
    else:
        own_calls = calls if role == "assistant" else ()
        expects, answers = (_HEAD, *own_calls), (_HEAD,)
        # Distinct non-empty call ids: a repeated one would make a second result a duplicate.
        plain = known_role and not empty and all(own_calls) and len(set(own_calls)) == len(own_calls)
    user_text = role == "user" and is_str
    return (role, call_id, calls, is_str, empty, reasoning, expects, answers, plain, user_text)


def _clean(signatures: list[Any]) -> bool:
    """Whether a tracker fed rows with these signatures would report nothing and rewrite nothing.
    (False may also mean "not sure": the caller then feeds a tracker.)

    Every row known and non-empty with well-formed calls, no two adjacent user texts, and each
    head row followed by exactly one tool row per call of its own, in call order (the heads' calls
    and the tool rows' answers, both with a marker per head, are then the same sequence)."""
    if not all(map(itemgetter(_PLAIN), signatures)):
        return False
    user_text = list(map(itemgetter(_USER_TEXT), signatures))
    if any(map(and_, user_text, user_text[1:])):
        return False
    expected = list(chain.from_iterable(map(itemgetter(_EXPECTS), signatures)))
    return expected == list(chain.from_iterable(map(itemgetter(_ANSWERS), signatures)))


def _saved(tracker: StructureTracker) -> dict[str, Any]:
    """The tracker's state, its containers copied (the tracker keeps mutating its own)."""
    return {k: v.copy() if isinstance(v, list | dict | set) else v for k, v in vars(tracker).items()}


def _restored(state: dict[str, Any]) -> StructureTracker:
    tracker = StructureTracker.__new__(StructureTracker)
    vars(tracker).update({k: v.copy() if isinstance(v, list | dict | set) else v for k, v in state.items()})
    return tracker


class SelectionStructure:
    """Structure trackers of successive selections, each resumed from the previous one's states."""

    def __init__(self) -> None:
        self._signatures: list[Any] = []
        self._states: list[dict[str, Any]] = [_saved(StructureTracker())]  # before rows 0, EVERY, ...

    def reset(self) -> None:
        """Forget the previous selection (the next one is fed from its first row)."""
        self._signatures = []
        del self._states[1:]

    def outcome(self, rows: list[Message], signatures: list[Any]) -> tuple[list[Violation], bool]:
        """The violations of ``rows`` and whether the sanitizers would change them (what a tracker
        fed all of ``rows`` says), with no tracker for a clean selection."""
        if _clean(signatures):
            return [], False
        tracker = self.tracker(rows, signatures)
        return tracker.violations(), tracker.needs_sanitizing

    def tracker(self, rows: list[Message], signatures: list[Any]) -> StructureTracker:
        """A tracker fed all of ``rows`` (whose structure signatures are ``signatures``)."""
        old = self._signatures
        k = min(len(old), len(signatures))
        differs = list(compress(range(k), map(is_not, signatures[:k], old[:k])))
        first = differs[0] if differs else k  # rows before it are structurally the previous ones
        # Saved states at rows 0, EVERY, ..., keep * EVERY stay valid (the previous selection may
        # have ended before the state at first // EVERY was saved).
        keep = min(first // EVERY, len(self._states) - 1)
        del self._states[keep + 1 :]
        tracker = _restored(self._states[keep])
        for i in range(keep * EVERY, len(rows)):
            if i and i % EVERY == 0 and i // EVERY >= len(self._states):
                self._states.append(_saved(tracker))
            tracker.feed(rows[i])
        self._signatures = list(signatures)
        return tracker
