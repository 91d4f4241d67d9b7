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
unchanged reuses what the host computed for it then. Only new rows are cloned and counted. Rows are
recognised by identity, not position (a selecting engine moves most rows on every request), through
one ``id()``-keyed dict of entries, so a whole result is mapped with a few C-level passes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import and_, eq, is_, is_not, itemgetter, ne, not_
from typing import Any

from contextlab.engine import Message
from contextlab.host.growing import GrowingView
from contextlab.host.history import UNCOUNTED, WorkingHistory
from contextlab.host.memo import MessageMemo
from contextlab.host.selection_structure import structure_signature
from contextlab.host.tracked import tracked_clone
from contextlab.host.user_turn import DB_PERSISTED_KEY
from contextlab.messages import clone_messages, tool_calls

__all__ = ["EngineViews", "structure_signature"]


RowSettled = Callable[[Message], bool]
"""Whether the host will change a history row no more (its in-place changes are done)."""


def settled_rule(*, uids: bool, store_stamps: bool) -> RowSettled:
    """When a host row is final: once stamped with its uids (newer hosts), once its session store
    wrote it (0.19.0 with a store: ``_db_persisted``), else at once (0.19.0 changes no row)."""
    if uids:
        return _settled
    if store_stamps:
        return _stored
    return _always


def _stored(row: Message) -> bool:
    return bool(row.get(DB_PERSISTED_KEY))


def _always(row: Message) -> bool:
    return True


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

    def __init__(self, settled: RowSettled = _settled) -> None:
        self._settled = settled
        self.rows: list[Message] = []
        self.index: dict[int, int] = {}
        self.changed: set[int] = set()
        """Positions of rows an engine changed since they were cloned (filled by the clones)."""
        self._unsettled: list[int] = []
        self.fresh: list[int] = []
        """Positions cloned since the owner last read this (it clears it)."""
        self.dropped: list[int] = []
        """Ids of clones replaced since the owner last read this (it clears it)."""
        self.generation = 0
        """Incremented on every reset (every clone replaced)."""

    def reset(self) -> None:
        # A new set: clones of the old mirror (an engine may keep them) record into the old one.
        self.rows, self.index, self.changed, self._unsettled = [], {}, set(), []
        self.fresh, self.dropped = [], []
        self.generation += 1

    def truncate(self, n: int) -> None:
        """Forget the clones from position ``n`` on (their source rows were replaced)."""
        if len(self.rows) <= n:
            return
        for clone in self.rows[n:]:
            self.index.pop(id(clone), None)
            self.dropped.append(id(clone))
        del self.rows[n:]
        # In place: the clones record into this very set.
        self.changed.difference_update([i for i in self.changed if i >= n])
        self._unsettled = [i for i in self._unsettled if i < n]
        self.fresh = [i for i in self.fresh if i < n]

    def _clone(self, row: Message, i: int) -> Message:
        clone: Message = tracked_clone(row, (self.changed, i))
        self.index[id(clone)] = i
        self.fresh.append(i)
        if not self._settled(row):
            self._unsettled.append(i)
        return clone

    def sync(self, source: Sequence[Message]) -> list[Message]:
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
                    self.dropped.append(id(rows[i]))
                    rows[i] = self._clone(source[i], i)
                elif not self._settled(source[i]):
                    self._unsettled.append(i)
        for i in range(len(rows), len(source)):
            rows.append(self._clone(source[i], i))
        return list(rows)

    def position(self, row: Message) -> int | None:
        i = self.index.get(id(row))
        return i if i is not None and i < len(self.rows) and self.rows[i] is row else None


_Entry = tuple[Message, Message, int, int, tuple[Any, ...], Message | None, int]
"""What the host knows of a row it may get back: the row itself, its wire form, exact and rough
tokens, structure signature, a snapshot (for a row the engine built; None for a handed-out copy)
and its history index (-1 if none)."""

_NO_ROW: Message = {}
_NO_ENTRY: _Entry = (_NO_ROW, _NO_ROW, 0, 0, (), None, -1)
"""What a row the host does not know is looked up as (its row is no returned row)."""

KEEP_BUILT = 256
"""Rows an engine built that stay known beyond those of its latest result (a marker it returns
again a few requests later is then recognised, not copied and hashed again)."""


_Columns = tuple[list[Message], list[int], list[int], list[tuple[Any, ...]]]
"""Wire forms, exact tokens, rough tokens and structure signatures of a selection's rows."""


@dataclass(frozen=True)
class _LastSelection:
    """The previous ``select_context`` result and its columns, for the next result's shared run.

    Consecutive selections mostly share a leading run of the very same row objects (the head, a
    kept block, a mask that changed one row near the end). While no handed-out row changed and no
    clone was replaced since, that run's columns are the previous ones: only the rows the host must
    look at on every request (rows the engine built, which it may change in place; rows from the
    conversation view) are checked again."""

    rows: list[Message]  # a copy of the result (it also keeps its rows alive: their ids stay theirs)
    columns: _Columns
    recheck: list[int]
    """Positions of rows that are not pristine handed-out copies (built rows, conversation rows)."""
    snapshots: list[Message | None]
    """For each ``recheck`` position, the built row's snapshot (None: not a built row)."""
    epoch: int


class EngineViews:
    """Hands engines private views of the history and maps what they return back to host rows."""

    def __init__(
        self, history: WorkingHistory, memo: MessageMemo, prefix: list[Message], settled: RowSettled = _settled
    ) -> None:
        self._history = history
        self._memo = memo
        self._prefix = prefix  # the system row, if any (host-owned, never mutated)
        self._prefix_wires = [memo.wire(m) for m in prefix]
        self._prefix_signatures = [structure_signature(m) for m in prefix]
        self._version = -1
        self._request = _Mirror(settled)  # system + history rows (select_context's request)
        self._conversation = _Mirror(settled)  # history rows (conversation_messages, compaction snapshots, hooks)
        self._generation = -1  # of the request mirror whose clones are in _entries
        # Per request position (system + history rows), extended as the history grows and kept per
        # history version: the host row, its wire form, exact and rough tokens, structure signature.
        self._refs: list[Message] = []
        self._wires: list[Message] = []
        self._exact: list[int] = []  # UNCOUNTED where the history has not counted the row yet
        self._rough: list[int] = []
        self._signatures: list[tuple[Any, ...]] = []
        # Every row the host may get back and can recognise by identity (the request mirror's clones
        # and rows the engine built), so a returned row costs one C-level lookup.
        self._entries: dict[int, _Entry] = {}
        self._built: set[int] = set()  # ids of the engine-built rows in _entries
        # Bumped whenever a handed-out clone's entry goes (its row may come back as an unknown one).
        self._epoch = 0
        self._last: _LastSelection | None = None

    def _check_version(self) -> None:
        history = self._history
        if history.version != self._version:
            kept = history.rows_kept if history.version == self._version + 1 else -1
            self._version = history.version
            if kept >= 0:
                self._keep_first(kept)
                return
            self._request.reset()
            self._conversation.reset()
            memo = self._memo
            self._refs, self._wires = list(self._prefix), list(self._prefix_wires)
            self._exact = [memo.exact(w) for w in self._prefix_wires]
            self._rough = [memo.rough(w) for w in self._prefix_wires]
            self._signatures = list(self._prefix_signatures)

    def _keep_first(self, kept: int) -> None:
        """The history replaced only its rows from ``kept`` on (the host's repair): the clones and
        columns of the rows before stay, the rest are made again when next needed."""
        n = len(self._prefix) + kept
        self._request.truncate(n)
        self._conversation.truncate(kept)
        self._refs, self._wires, self._exact = self._refs[:n], self._wires[:n], self._exact[:n]
        self._rough, self._signatures = self._rough[:n], self._signatures[:n]
        self._last = None
        self._epoch += 1

    def _extend_columns(self) -> None:
        """Bring the per-position columns up to the history's rows (work for the new rows only)."""
        rows = self._history.peek()
        start = len(self._refs) - len(self._prefix)
        if start < len(rows):
            new = rows[start:]
            wires, exact, rough = self._history.counts_from(start)
            self._refs += new
            self._wires += wires
            self._exact += exact
            self._rough += rough
            self._signatures += map(structure_signature, new)

    def _register_clones(self) -> None:
        """Enter the request mirror's new clones in ``_entries`` and drop the replaced ones."""
        mirror, entries = self._request, self._entries
        if mirror.generation != self._generation:  # every clone is new: forget all the old ones
            self._generation = mirror.generation
            self._entries = entries = {k: entries[k] for k in self._built}
            self._epoch += 1
        elif mirror.dropped:
            for k in mirror.dropped:
                entries.pop(k, None)
            self._epoch += 1
        mirror.dropped = []
        if mirror.fresh:
            self._extend_columns()
            n_prefix = len(self._prefix)
            for i in mirror.fresh:
                clone = mirror.rows[i]
                column = self._wires[i], self._exact[i], self._rough[i], self._signatures[i]
                entries[id(clone)] = (clone, *column, None, i - n_prefix)
            mirror.fresh = []

    def invalidate(self) -> None:
        """Forget every handed-out row (an abandoned, still-running pass may hold them)."""
        self._version = -1
        self._check_version()

    def request(self) -> list[Message]:
        """The engine's copy of system + history (for ``select_context``)."""
        self._check_version()
        rows = self._history.peek()
        handed = self._request.sync(GrowingView(rows, len(rows), self._prefix))  # no copy of the rows
        self._register_clones()
        return handed

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

    def selection(
        self, result: list[Message]
    ) -> tuple[list[Message], list[int], list[int], bool, list[tuple[Any, ...]]]:
        """Wire rows, exact and rough tokens of a ``select_context`` result (after :meth:`request`),
        whether its structure is exactly the unselected request's (so the history's structure
        state applies), and each row's structure signature (the same object while a row is known
        unchanged). When the engine changed no row it was handed, this costs a few C-level passes
        over the result plus Python work per row the host has not seen before."""
        self._check_version()
        self._register_clones()
        self._extend_columns()
        # The clones record changes: with none, every handed-out row is as it was handed.
        if not self._request.changed:
            columns, recheck, snapshots = self._incremental(result)
        else:
            columns = self._resolved(result)
            recheck, snapshots = self._rechecks(self._entries_of(result), 0)
        self._last = _LastSelection(list(result), columns, recheck, snapshots, self._epoch)
        self._forget_built(result, sum(map(is_not, snapshots, repeat(None))))
        wires, exact, rough, signatures = columns
        same_structure = signatures == self._signatures  # identity first: C-level
        return wires, exact, rough, same_structure, signatures

    def _incremental(self, result: list[Message]) -> tuple[_Columns, list[int], list[Message | None]]:
        """:meth:`selection`'s columns (and what to recheck next time) when every handed-out row is
        pristine: the leading run shared with the previous result reuses its columns, the rest is
        looked up (:meth:`_looked_up`). Costs one C-level identity scan of the shared run, a C-level
        compare per built row in it, and :meth:`_looked_up` of the rows after it."""
        last = self._last
        shared = 0
        if last is not None and last.epoch == self._epoch:
            shared = next(compress(count(), map(is_not, result, last.rows)), min(len(result), len(last.rows)))
            # A built row changed since, or a row that is not the host's at all (a conversation
            # row, whose snapshot is None), ends the reused run: such rows are checked every time.
            cut = bisect_left(last.recheck, shared)
            positions = last.recheck[:cut]
            differs = map(ne, map(result.__getitem__, positions), last.snapshots[:cut])
            shared = next(compress(positions, differs), shared)
        if not shared:
            columns, found = self._looked_up(result)
            return columns, *self._rechecks(found, 0)
        assert last is not None
        (wires, exact, rough, signatures), found = self._looked_up(result[shared:])
        old_wires, old_exact, old_rough, old_signatures = last.columns
        columns = (
            old_wires[:shared] + wires,
            old_exact[:shared] + exact,
            old_rough[:shared] + rough,
            old_signatures[:shared] + signatures,
        )
        cut = bisect_left(last.recheck, shared)
        recheck, snapshots = self._rechecks(found, shared)
        return columns, last.recheck[:cut] + recheck, last.snapshots[:cut] + snapshots

    def _rechecks(self, found: list[_Entry], start: int) -> tuple[list[int], list[Message | None]]:
        """Positions (counted from ``start``) of the rows whose entries are ``found`` that are not
        pristine handed-out copies, with the snapshot of each built one (None for the others).
        ``found`` is what :meth:`_looked_up` returns: the entries after the lookup, so every built
        row has its entry."""
        # A handed-out copy's entry has no snapshot; a built row's has one; a row without an
        # entry (a conversation row) is _NO_ENTRY, whose snapshot is None too.
        snapshots = list(map(itemgetter(5), found))
        handed = map(and_, map(is_, snapshots, repeat(None)), map(is_not, found, repeat(_NO_ENTRY)))
        positions = list(compress(count(start), map(not_, handed)))
        return positions, [snapshots[i - start] for i in positions]

    def _entries_of(self, result: list[Message]) -> list[_Entry]:
        """Each row's entry (:data:`_NO_ENTRY` for a row without one), by identity, at C level."""
        return list(map(self._entries.get, map(id, result), repeat(_NO_ENTRY)))

    def _looked_up(self, result: list[Message]) -> tuple[_Columns, list[_Entry]]:
        """:meth:`selection`'s columns when every handed-out row is pristine, and each row's entry
        after the lookup (for :meth:`_rechecks`). Each row's entry is looked up by identity in one
        C-level pass; only rows without one (new rows, rows from another view, engine-built rows
        changed since) go through :meth:`_resolve`, and only their entries are looked up again."""
        n = len(result)
        found = self._entries_of(result)
        # One pass per column needed (each entry's items are touched once, not unpacked whole).
        wires, exact, rough, signatures = (list(map(itemgetter(k), found)) for k in (1, 2, 3, 4))
        snapshots = list(map(itemgetter(5), found))
        # An entry holds its row, so no other live object has its id: a hit is that very row.
        known = list(map(is_not, found, repeat(_NO_ENTRY)))
        # An engine-built row counts only while it still equals its snapshot (the engine owns it).
        built = list(compress(range(n), map(is_not, snapshots, repeat(None))))
        if built:
            changed = map(ne, map(result.__getitem__, built), map(snapshots.__getitem__, built))
            for i in compress(built, changed):
                known[i] = False
        if UNCOUNTED in exact:  # rows the history counts only when read (a user row)
            for i in compress(range(n), map(eq, exact, repeat(UNCOUNTED))):
                if known[i]:
                    exact[i] = self._counted(result[i], found[i][6])
        entries = self._entries
        for i in compress(range(n), map(not_, known)):
            _, wires[i], exact[i], rough[i], signatures[i] = self._resolve(result[i], True)
            found[i] = entries.get(id(result[i]), _NO_ENTRY)
        return (wires, exact, rough, signatures), found

    def _counted(self, clone: Message, i: int) -> int:
        """History row ``i``'s exact tokens, counted now, also noted in its entry and column."""
        exact = self._history.row_counts(i)[1]
        j = len(self._prefix) + i
        self._exact[j] = exact
        entry = self._entries[id(clone)]
        self._entries[id(clone)] = (*entry[:2], exact, *entry[3:])  # type: ignore[assignment]
        return exact

    def _resolved(self, result: list[Message]) -> _Columns:
        """:meth:`selection`'s columns row by row (the engine changed a row it was handed)."""
        wires: list[Message] = []
        exact: list[int] = []
        rough: list[int] = []
        signatures: list[tuple[Any, ...]] = []
        for m in result:
            _, wire, tokens, estimate, signature = self._resolve(m, False)
            wires.append(wire)
            exact.append(tokens)
            rough.append(estimate)
            signatures.append(signature)
        return wires, exact, rough, signatures

    def _forget_built(self, result: list[Message], built_in_result: int) -> None:
        """Keep the engine-built rows of ``result`` (``built_in_result`` of them), and up to
        :data:`KEEP_BUILT` others (checked only when that many accumulated beyond the result's own,
        so the work is per row built)."""
        if len(self._built) <= KEEP_BUILT + built_in_result:
            return
        keep = self._built.intersection(map(id, result))
        for k in self._built - keep:
            del self._entries[k]
        self._built = keep

    def _resolve(self, m: Message, pristine: bool) -> tuple[Message, Message, int, int, tuple[Any, ...]]:
        """(reference content, wire, exact, rough, signature) of one returned row."""
        n_prefix = len(self._prefix)
        j = self._request.position(m)
        if j is not None and (pristine or m == self._refs[j]):
            if j < n_prefix:
                wire = self._prefix_wires[j]
                return self._prefix[j], wire, self._memo.exact(wire), self._memo.rough(wire), self._prefix_signatures[j]
            return self._history_row(j - n_prefix)
        i = self._conversation.position(m)
        rows = self._history.peek()
        if i is not None and i < len(rows) and m == rows[i]:
            return self._history_row(i)
        entry = self._entries.get(id(m))
        if entry is not None and entry[0] is m and entry[5] is not None and m == entry[5]:
            return entry[5], *entry[1:5]
        snapshot = clone_messages([m])[0]  # the engine may change its own dict later
        wire, tokens, estimate = self._memo.row(snapshot)
        signature = structure_signature(snapshot)
        if entry is None or entry[5] is not None:  # (never in place of a handed-out copy's entry)
            self._entries[id(m)] = (m, wire, tokens, estimate, signature, snapshot, -1)
            self._built.add(id(m))
        return snapshot, wire, tokens, estimate, signature

    def _history_row(self, i: int) -> tuple[Message, Message, int, int, tuple[Any, ...]]:
        wire, tokens, estimate = self._history.row_counts(i)
        j = len(self._prefix) + i
        return self._refs[j], wire, tokens, estimate, self._signatures[j]
