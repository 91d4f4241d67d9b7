"""What engines are handed: engine-owned copies of the history, made once per row (``docs/performance.md``).

The host never lets an engine touch its own rows (a mutating engine must not reach the history).
Instead of a deep copy of the whole history on every hook call, it keeps *mirrors*: one private
clone per history row, made when the row first goes to an engine and handed out again on every later
call. The clones record the rows an engine changes (:mod:`contextlab.host.tracked`), so before a
hand-out only those rows (and the newest ones, which the host may still stamp) are compared with the
host rows; a row that differs is re-cloned. An engine that mutates what it was given therefore still
changes nothing, and the next call sees pristine rows, as with fresh copies, at a cost per changed
row instead of per history row.

Because handed-out rows keep their identity, a row an engine returns unchanged (the very object it
was given, equal to the host row) is recognised in O(1) and reuses the host's per-row results
(wire form, counts, structure), and a row an engine built on an earlier request and returns again
unchanged reuses what the host computed for it then. Only new rows are cloned and counted.
"""

from __future__ import annotations

from itertools import compress
from operator import gt, is_, not_
from typing import Any

from contextlab.engine import Message
from contextlab.host.history import WorkingHistory
from contextlab.host.memo import MessageMemo
from contextlab.host.tracked import tracked_clone
from contextlab.messages import clone_messages, is_empty, tool_calls


def structure_signature(message: Message) -> tuple[Any, ...]:
    """Everything about a row the structure rules and the sanitizers' skip decision depend on."""
    content = message.get("content")
    return (
        message.get("role"),
        message.get("tool_call_id"),
        tuple(str(c.get("id") or "") for c in tool_calls(message)),
        isinstance(content, str),
        is_empty(message),
        bool(message.get("reasoning") or message.get("reasoning_content")),
    )


def _settled(row: Message) -> bool:
    """The host will not change ``row`` any more: ``stamp_identity`` (its only in-place change of a
    history row, a first insert) has nothing left to add to it."""
    if not row.get("message_uid"):
        return False
    role = row.get("role")
    if role == "assistant":
        return not tool_calls(row) or isinstance(row.get("_tool_call_uids"), dict)
    return role != "tool" or "_tool_call_uid" in row


class _Mirror:
    """Engine-owned clones of a list of host rows, with an identity index back to the rows.

    The clones record the rows an engine changes (:mod:`contextlab.host.tracked`); before a
    hand-out only those, and the rows whose source the host may still stamp, are compared with
    their sources. A row that differs is cloned again."""

    def __init__(self) -> None:
        self.rows: list[Message] = []
        self.index: dict[int, int] = {}
        self.changed: set[int] = set()
        """Positions of rows an engine changed since they were cloned (filled by the clones)."""
        self._unsettled: list[int] = []

    def reset(self) -> None:
        # A new set: clones of the old mirror (an engine may keep them) record into the old one.
        self.rows, self.index, self.changed, self._unsettled = [], {}, set(), []

    def _clone(self, row: Message, i: int) -> Message:
        clone: Message = tracked_clone(row, (self.changed, i))
        self.index[id(clone)] = i
        if not _settled(row):
            self._unsettled.append(i)
        return clone

    def sync(self, source: list[Message]) -> list[Message]:
        """A fresh list of clones equal to ``source`` (clones reused when still pristine)."""
        rows = self.rows
        if len(rows) > len(source):
            self.reset()
            rows = self.rows
        if self.changed or self._unsettled:
            check = sorted({*self.changed, *self._unsettled})
            self.changed.clear()
            self._unsettled = []
            for i in check:
                if i >= len(rows):
                    continue
                if rows[i] != source[i]:
                    del self.index[id(rows[i])]
                    rows[i] = self._clone(source[i], i)
                elif not _settled(source[i]):
                    self._unsettled.append(i)
        for i in range(len(rows), len(source)):
            rows.append(self._clone(source[i], i))
        return list(rows)

    def position(self, row: Message) -> int | None:
        i = self.index.get(id(row))
        return i if i is not None and i < len(self.rows) and self.rows[i] is row else None


class EngineViews:
    """Hands engines private views of the history and maps what they return back to host rows."""

    def __init__(self, history: WorkingHistory, memo: MessageMemo, prefix: list[Message]) -> None:
        self._history = history
        self._memo = memo
        self._prefix = prefix  # the system row, if any (host-owned, never mutated)
        self._prefix_wires = [memo.wire(m) for m in prefix]
        self._version = -1
        self._request = _Mirror()  # system + history rows (select_context's request)
        self._conversation = _Mirror()  # history rows (conversation_messages, compaction snapshots, hooks)
        self._signatures: list[tuple[Any, ...]] = []
        self._prefix_signatures = [structure_signature(m) for m in prefix]
        self._source: list[Message] = []
        self._handed: list[Message] = []
        # The previous selection only (so nothing is kept alive longer): the rows returned, the
        # content each stood for, and what the host computed for them.
        self._previous: tuple[list[Message], list[Any], list[Any], list[int], list[int], list[Any]] | None = None
        self._previous_version = -1
        _Built = tuple[Message, Message, Message, int, int, tuple[Any, ...]]
        self._built: dict[int, _Built] = {}

    def _check_version(self) -> None:
        if self._history.version != self._version:
            self._version = self._history.version
            self._request.reset()
            self._conversation.reset()
            self._signatures = []

    def invalidate(self) -> None:
        """Forget every handed-out row (an abandoned, still-running pass may hold them)."""
        self._version = -1
        self._check_version()

    def request(self) -> list[Message]:
        """The engine's copy of system + history (for ``select_context``)."""
        self._check_version()
        self._source = self._prefix + self._history.peek()
        self._handed = self._request.sync(self._source)
        return self._handed

    def conversation(self) -> list[Message]:
        """The engine's copy of the history (``conversation_messages``, compaction snapshots, hooks);
        its rows are separate objects from :meth:`request`'s, as with fresh copies."""
        self._check_version()
        return self._conversation.sync(self._history.peek())

    def host_row(self, row: Message) -> Message | None:
        """The host row an engine-returned ``row`` stands for, if it is a handed-out copy left unchanged."""
        rows = self._history.peek()
        i = self._conversation.position(row)
        if i is not None and i < len(rows) and row == rows[i]:
            return rows[i]
        j = self._request.position(row)
        n_prefix = len(self._prefix)
        if j is not None and n_prefix <= j < n_prefix + len(rows) and row == rows[j - n_prefix]:
            return rows[j - n_prefix]
        return None

    def adopt(self, returned: list[Message]) -> list[Message]:
        """Host-owned rows for a compaction result: unchanged rows are the host's own, others clones."""
        adopted: list[Message] = []
        used: set[int] = set()
        for m in returned:
            row = self.host_row(m)
            if row is None or id(row) in used:  # a row returned twice becomes two rows, as with clones
                row = clone_messages([m])[0]
            used.add(id(row))
            adopted.append(row)
        return adopted

    def _history_signatures(self) -> list[tuple[Any, ...]]:
        rows, sigs = self._history.peek(), self._signatures
        for i in range(len(sigs), len(rows)):
            sigs.append(structure_signature(rows[i]))
        return sigs

    def selection(
        self, result: list[Message]
    ) -> tuple[list[Message], list[int], list[int], bool, list[tuple[Any, ...]]]:
        """Wire rows, exact and rough tokens of a ``select_context`` result (after :meth:`request`),
        whether its structure is exactly the unselected request's (so the history's structure
        state applies), and each row's structure signature (the same object while a row is known
        unchanged). Costs C-level list operations plus Python work per row that differs from
        both the previous result and the rows handed out."""
        n = len(result)
        # Did the engine leave every row it was handed as it was? (The clones record changes.)
        pristine = not self._request.changed
        refs: list[Message | None] = [None] * n
        wires: list[Message | None] = [None] * n
        exact = [0] * n
        rough = [0] * n
        signatures: list[tuple[Any, ...] | None] = [None] * n
        todo: Any = range(n)
        previous = self._previous if pristine and self._previous_version == self._version else None
        if previous is not None:
            old, old_refs, old_wires, old_exact, old_rough, old_signatures = previous
            k = min(n, len(old))
            same = list(map(is_, result[:k], old[:k]))
            # Rows returned again at the same place must still hold what they held then; the
            # handed-out ones among them were just checked, so only the engine's own are compared.
            handed = list(map(is_, result[:k], self._handed[:k]))
            handed += [False] * (k - len(handed))
            own = list(map(gt, same, handed))
            if list(compress(result, own)) == list(compress(old_refs, own)):
                refs[:k], wires[:k], exact[:k], rough[:k] = old_refs[:k], old_wires[:k], old_exact[:k], old_rough[:k]
                signatures[:k] = old_signatures[:k]
                todo = [*compress(range(k), map(not_, same)), *range(k, n)]
        # Rows the engine built earlier and returns again elsewhere are recognised too; only the rows
        # of this result stay remembered.
        for i in todo:
            refs[i], wires[i], exact[i], rough[i], signatures[i] = self._resolve(result[i], pristine)
        if self._built:
            present = set(map(id, result))
            self._built = {k: v for k, v in self._built.items() if k in present}
        self._previous = (list(result), refs, wires, exact, rough, signatures)
        self._previous_version = self._version
        history_signatures = self._history_signatures()
        same_structure = n == len(self._source) and signatures == [*self._prefix_signatures, *history_signatures]
        return wires, exact, rough, same_structure, signatures  # type: ignore[return-value]

    def _resolve(self, m: Message, pristine: bool) -> tuple[Message, Message, int, int, tuple[Any, ...]]:
        """(reference content, wire, exact, rough, signature) of one returned row."""
        n_prefix = len(self._prefix)
        j = self._request.position(m)
        if j is not None and (pristine or m == self._source[j]):
            if j < n_prefix:
                wire = self._prefix_wires[j]
                return self._prefix[j], wire, self._memo.exact(wire), self._memo.rough(wire), self._prefix_signatures[j]
            return self._history_row(j - n_prefix)
        i = self._conversation.position(m)
        rows = self._history.peek()
        if i is not None and i < len(rows) and m == rows[i]:
            return self._history_row(i)
        built = self._built.get(id(m))
        if built is not None and built[0] is m and m == built[1]:
            return built[1:]
        snapshot = clone_messages([m])[0]  # the engine may change its own dict later
        wire, tokens, estimate = self._memo.row(snapshot)
        found = (m, snapshot, wire, tokens, estimate, structure_signature(snapshot))
        self._built[id(m)] = found
        return found[1:]

    def _history_row(self, i: int) -> tuple[Message, Message, int, int, tuple[Any, ...]]:
        wire, tokens, estimate = self._history.row_counts(i)
        return self._history.peek()[i], wire, tokens, estimate, self._history_signatures()[i]
