"""The engine-managed working history, with everything a request needs kept up to date per row.

Between compactions the history only grows, so each appended row is converted to its wire form,
counted exactly and roughly, and fed to the structure tracker (and, once a history needs them, the
request sanitizers) once. Building a request, its token count and the host's pressure figure then
cost O(1) per request (views of these lists, ``contextlab/host/growing.py``): replay time stays
linear in conversation length.

The per-row results live in lists parallel to the rows, not in an identity-keyed memo, so a row the
history drops (a compaction) takes its results with it (``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from contextlab.engine import Message
from contextlab.host.growing import GrowingView
from contextlab.host.legacy_rough import LegacyRoughColumns
from contextlab.host.memo import MessageMemo
from contextlab.host.repair import Repair, RepairWatch, repair_history
from contextlab.host.sanitized import Emitted, IncrementalSanitizer
from contextlab.messages import StructureTracker, clone_messages

UNCOUNTED = -1
"""A row's exact tokens not counted yet (counted when read)."""

if TYPE_CHECKING:
    from contextlab.host.views import EngineViews


class HistorySnapshot(GrowingView[Message]):
    """The history as it was when taken, without copying it: the history's list only grows between
    replacements (a replacement starts a new list), so its first ``len`` rows never change."""

    __slots__ = ()


class WorkingHistory:
    """The host's history (``rows``) plus parallel wire forms, token counts and structure state.

    A list obtained from ``rows`` keeps describing the moment it was taken: appends after it copy the
    list first (copy on write). The wire and count lists are only appended to until the next
    replacement, so a request can be a view of them.
    """

    def __init__(
        self,
        memo: MessageMemo,
        system_prompt: str | None,
        *,
        legacy_rough: bool = False,
        settled: Callable[[Message], bool] | None = None,
    ) -> None:
        self._memo = memo
        self._system_prompt = system_prompt
        self._legacy_rough = legacy_rough
        self._settled = settled  # when the host is done changing a row in place (engine views)
        self.legacy: LegacyRoughColumns | None = None
        """0.19.0's estimates of the rows (``hermes_version="0.19.0"`` only)."""
        self._prefix_wires: list[Message] = []
        if system_prompt:
            wire = memo.wire({"role": "system", "content": system_prompt})
            self._prefix_wires = [wire]
        self.version = 0
        """Incremented whenever the history is replaced (a committed pass, a new session, a repair)."""
        self.commits = 0
        """Incremented whenever something other than the host's own repair replaces the history."""
        self.rows_kept = -1
        """Rows the latest replacement kept as they were, every per-row result with them (a repair's
        rows before its start); -1 after a whole replacement."""
        self._rows: list[Message] = []
        self._shared = False
        self._views: EngineViews | None = None
        self.replace([])

    def engine_views(self) -> EngineViews:
        """The engine-owned copies of this history (made on first use)."""
        if self._views is None:
            from contextlab.host.views import EngineViews

            prefix = [{"role": "system", "content": self._system_prompt}] if self._system_prompt else []
            if self._settled is None:
                self._views = EngineViews(self, self._memo, prefix)
            else:
                self._views = EngineViews(self, self._memo, prefix, self._settled)
        return self._views

    def peek(self) -> list[Message]:
        """The rows, for a read that keeps no reference (does not make the next append copy the list)."""
        return self._rows

    def last_user(self) -> Message | None:
        """The newest user row (kept as rows are added: an agent's session may hold one user row
        thousands of rows back, and every request asks)."""
        return self._rows[self._last_user] if self._last_user >= 0 else None

    def snapshot(self) -> HistorySnapshot:
        """The rows as they are now, in O(1) (later appends do not show in it, and are not copied)."""
        return HistorySnapshot(self._rows, len(self._rows))

    @property
    def rows(self) -> list[Message]:
        """The rows (treat as read-only; the list is never changed after it is handed out)."""
        self._shared = True
        return self._rows

    def replace(self, rows: list[Message]) -> None:
        """Adopt a whole new history (rows must already be host-owned copies).

        Rows that are the very objects of the current history keep their per-row results.
        """
        old = {id(row): i for i, row in enumerate(self._rows)} if self._rows else {}
        old_rows = self._rows
        old_wires, old_exact, old_rough = (self.wires, self._exact, self._rough) if old else ([], [], [])
        self._rows = list(rows)
        self._shared = False
        self.wires: list[Message] = []
        self._exact: list[int] = []  # UNCOUNTED until read: see append()
        self._uncounted: list[int] = []
        self._rough: list[int] = []
        self._rough_cumulative: list[int] = [0]
        self._thinking_cumulative: list[int] = [0]  # memo.stale_thinking of the rows, summed
        self._last_thinking = 0  # memo.stale_thinking of the newest assistant row
        self._exact_total = 0
        self._index: dict[int, int] = {}
        self._last_user = -1
        self.legacy = LegacyRoughColumns(self._memo.echo_reasoning) if self._legacy_rough else None
        self.structure = StructureTracker()
        self._watch = RepairWatch()  # the host's messages list holds no system row: not fed one
        self._sanitizer: IncrementalSanitizer | None = None
        if self._system_prompt:
            self.structure.feed({"role": "system", "content": self._system_prompt})
        self._add_all(self._rows, old_rows, old, (old_wires, old_exact, old_rough))
        self.version += 1
        self.commits += 1
        self.rows_kept = -1

    def repair(self, marker: str) -> Repair | None:
        """Repair the history as the host does before each request (:mod:`contextlab.host.repair`);
        None when the host would change nothing (known per row as rows are added, so this is O(1)).

        Only the rows from the watch's resume point on are walked and re-added (a repair's change is
        almost always among the newest rows); the rows before it keep everything kept for them."""
        watch = self._watch
        if not watch.dirty:
            return None
        start = watch.resume_at
        result = repair_history(self._rows, marker, start)
        if not result.changed:  # never so while the watch is exact; its state is still the rows'
            watch.dirty = False
            return None
        self._replace_from(start, result.rows)
        return result

    def _replace_from(self, start: int, rows: list[Message]) -> None:
        """Adopt ``rows``, whose first ``start`` rows are this history's own: their per-row results are
        kept as they are (new lists, so views of the old ones stay true), the rest re-added (rows
        that are old objects keep their wire forms and counts). Not a commit."""
        old_rows = self._rows
        old = {id(old_rows[i]): i for i in range(start, len(old_rows))}
        old_wires, old_exact, old_rough = self.wires, self._exact, self._rough
        for i in range(start, len(old_rows)):
            if self._index.get(id(old_rows[i])) == i:
                del self._index[id(old_rows[i])]
        self._rows = list(rows)
        self._shared = False
        self.wires = old_wires[:start]
        self._exact = old_exact[:start]
        self._rough = old_rough[:start]
        self._uncounted = [i for i in self._uncounted if i < start]
        self._exact_total = sum(e for e in self._exact if e > 0)
        self._rough_cumulative = self._rough_cumulative[: start + 1]
        self._thinking_cumulative = self._thinking_cumulative[: start + 1]
        if self.legacy is not None:
            self.legacy.truncate(start)
        self._last_user = next((i for i in range(start - 1, -1, -1) if rows[i].get("role") == "user"), -1)
        newest_assistant = next((i for i in range(start - 1, -1, -1) if rows[i].get("role") == "assistant"), -1)
        self._last_thinking = self._memo.stale_thinking(rows[newest_assistant]) if newest_assistant >= 0 else 0
        # The structure tracker cannot step back: it is fed again (one cheap pass); the repair watch
        # resumes at ``start`` (nothing before it needed repair); the sanitizers restart when next read.
        self.structure = StructureTracker()
        if self._system_prompt:
            self.structure.feed({"role": "system", "content": self._system_prompt})
        for row in rows[:start]:
            self.structure.feed(row)
        self._watch = RepairWatch.resumed(rows, start)
        self._sanitizer = None
        self._add_all(self._rows[start:], old_rows, old, (old_wires, old_exact, old_rough))
        self.version += 1
        self.rows_kept = start

    def _add_all(
        self,
        rows: list[Message],
        old_rows: list[Message],
        old: dict[int, int],
        columns: tuple[list[Message], list[int], list[int]],
    ) -> None:
        """Add ``rows``; those that are rows of the replaced history (``old``: id -> index) keep
        their wire forms and counts."""
        wires, exact, rough = columns
        for row in rows:
            at = old.get(id(row))
            if at is not None and old_rows[at] is row:
                self._add(row, wires[at], exact[at], rough[at])
            else:
                self._add(row)

    def _add(self, row: Message, wire: Message | None = None, exact: int = -1, rough: int = -1) -> None:
        if wire is None:
            wire, exact, rough = self._memo.row(row)
        self._keep(row, wire, exact, rough)

    def _keep(self, row: Message, wire: Message, exact: int, rough: int) -> None:
        role = row.get("role")
        if role == "user":
            self._last_user = len(self.wires)
        thinking = 0
        if role == "assistant":
            thinking = self._last_thinking = self._memo.stale_thinking(row)
        self._thinking_cumulative.append(self._thinking_cumulative[-1] + thinking)
        self._index[id(row)] = len(self.wires)
        if exact < 0:
            self._uncounted.append(len(self.wires))
        else:
            self._exact_total += exact
        self.wires.append(wire)
        self._exact.append(exact)
        self._rough.append(rough)
        # The host estimates the request it is about to send, so the rough figures are of wire forms.
        self._rough_cumulative.append(self._rough_cumulative[-1] + rough)
        if self.legacy is not None:
            self.legacy.add(row)
        self.structure.feed(row)
        self._watch.feed(row)
        if self._sanitizer is not None:
            self._sanitizer.feed(wire, exact, rough)

    def append(self, recorded: list[Message]) -> list[Message]:
        """Append clones of recorded rows (the transcript itself is never touched); returns the clones."""
        clones = clone_messages(recorded)
        if self._shared:
            self._rows = list(self._rows)
            self._shared = False
        self._rows.extend(clones)
        memo = self._memo  # its results live in the parallel lists: no content-keyed memo
        for row in clones:
            if row.get("role") == "user" and isinstance(row.get("content"), str):
                # A user row may be merged with the next one in every request (adjacent user rows):
                # its own exact count is taken only if something reads it.
                wire, rough = memo.fresh_wire(row)
                self._keep(row, wire, UNCOUNTED, rough)
            else:
                wire, exact, rough = memo.fresh_row(row)
                self._keep(row, wire, exact, rough)
        return clones

    @property
    def exact(self) -> list[int]:
        """Exact tokens of each row's wire form (treat as read-only)."""
        if self._uncounted:
            self._count_rows()
        return self._exact

    @property
    def exact_total(self) -> int:
        """Exact tokens of all rows' wire forms."""
        if self._uncounted:
            self._count_rows()
        return self._exact_total

    def _count_rows(self) -> None:
        for i in self._uncounted:
            self._counted(i)
        self._uncounted = []

    def _counted(self, i: int) -> int:
        """Row ``i``'s exact tokens, counted now if they were not (a user row is counted when read)."""
        exact = self._exact[i]
        if exact < 0:
            self._exact[i] = exact = self._memo.exact_counter.count_message(self.wires[i])
            self._exact_total += exact
        return exact

    def __len__(self) -> int:
        return len(self._rows)

    def position(self, row: Message) -> int | None:
        """Index of ``row`` if it is one of the history's own row objects (identity), else None."""
        i = self._index.get(id(row))
        return i if i is not None and self._rows[i] is row else None

    def counts_from(self, start: int) -> tuple[list[Message], list[int], list[int]]:
        """Wire forms, exact tokens (``UNCOUNTED`` where not read yet) and rough tokens of the rows
        from ``start`` on (new lists: the exact ones are filled in place when read)."""
        return self.wires[start:], self._exact[start:], self._rough[start:]

    def row_counts(self, i: int) -> tuple[Message, int, int]:
        """Wire form, exact tokens and rough tokens of row ``i``."""
        return self.wires[i], self._counted(i), self._rough[i]

    @property
    def rough_total(self) -> int:
        """The host's rough estimate of all rows."""
        return self._rough_cumulative[-1]

    def rough_since(self, index: int) -> int:
        """The rough estimate of the rows from ``index`` on (rows appended since a usage anchor)."""
        return self._rough_cumulative[-1] - self._rough_cumulative[min(index, len(self._rows))]

    @property
    def stale_thinking_total(self) -> int:
        """What the rows' reasoning adds to an estimate of the persisted rows (a strict route's:
        :meth:`MessageMemo.stale_thinking`)."""
        return self._thinking_cumulative[-1]

    def stale_thinking_since(self, index: int) -> int:
        """:attr:`stale_thinking_total` of the rows from ``index`` on."""
        return self._thinking_cumulative[-1] - self._thinking_cumulative[min(index, len(self._rows))]

    @property
    def newest_thinking(self) -> int:
        """:meth:`MessageMemo.stale_thinking` of the newest assistant row: the one turn whose
        reasoning a strict route's estimate keeps."""
        return self._last_thinking

    def sanitized(self, prefix_tokens: list[int]) -> Emitted:
        """The sanitized request over system + rows, kept up to date incrementally."""
        sanitizer = self._sanitizer
        if sanitizer is None:
            memo = self._memo
            sanitizer = IncrementalSanitizer(memo.exact_counter, memo.rough_counter)
            for wire, tokens in zip(self._prefix_wires, prefix_tokens, strict=True):
                sanitizer.feed(wire, tokens, memo.rough(wire))
            for wire, tokens, rough in zip(self.wires, self._exact, self._rough, strict=True):
                sanitizer.feed(wire, tokens, rough)
            self._sanitizer = sanitizer
        return sanitizer.emit()

    def last_sanitized(self) -> Sequence[Message] | None:
        """The list the previous :meth:`sanitized` call returned (None if none since the last replace)."""
        return self._sanitizer.last_emit if self._sanitizer is not None else None
