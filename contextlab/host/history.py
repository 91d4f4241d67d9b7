"""The engine-managed working history, with everything a request needs kept up to date per row.

Between compactions the history only grows, so each appended row is converted to its wire form,
counted exactly and roughly, and fed to the structure tracker once. Building a request, its token
count and the host's pressure figure then cost O(1) per request plus a C-level list copy, instead
of a Python pass over the whole history: replay time stays linear in conversation length.
"""

from __future__ import annotations

from itertools import accumulate

from contextlab.engine import Message
from contextlab.host.memo import MessageMemo
from contextlab.messages import StructureTracker, clone_messages


class WorkingHistory:
    """The host's history (``rows``) plus parallel wire forms, token counts and structure state.

    ``rows`` is replaced, never mutated in place, so a list handed out earlier (to an observer, or as
    a compaction snapshot's source) keeps describing the moment it was taken.
    """

    def __init__(self, memo: MessageMemo, system_prompt: str | None) -> None:
        self._memo = memo
        self._system_prompt = system_prompt
        self.version = 0
        """Incremented whenever the history is replaced (a committed compaction or prune)."""
        self.replace([])

    def replace(self, rows: list[Message]) -> None:
        """Adopt a whole new history (rows must already be host-owned copies)."""
        self.rows: list[Message] = list(rows)
        self.wires: list[Message] = [self._memo.wire(m) for m in self.rows]
        self.exact: list[int] = [self._memo.exact(w) for w in self.wires]
        self.exact_total = sum(self.exact)
        # The host estimates the request it is about to send, so the rough figures are of wire forms.
        self._rough_cumulative: list[int] = [0, *accumulate(self._memo.rough(w) for w in self.wires)]
        self.structure = StructureTracker()
        if self._system_prompt:
            self.structure.feed({"role": "system", "content": self._system_prompt})
        for row in self.rows:
            self.structure.feed(row)
        self.version += 1

    def append(self, recorded: list[Message]) -> list[Message]:
        """Append clones of recorded rows (the transcript itself is never touched); returns the clones."""
        clones = clone_messages(recorded)
        wires = [self._memo.wire(m) for m in clones]
        exact = [self._memo.exact(w) for w in wires]
        cumulative = self._rough_cumulative[-1]
        for row, wire in zip(clones, wires, strict=True):
            cumulative += self._memo.rough(wire)
            self._rough_cumulative.append(cumulative)
            self.structure.feed(row)
        self.rows = [*self.rows, *clones]
        self.wires = [*self.wires, *wires]
        self.exact = [*self.exact, *exact]
        self.exact_total += sum(exact)
        return clones

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def rough_total(self) -> int:
        """The host's rough estimate of all rows."""
        return self._rough_cumulative[-1]

    def rough_since(self, index: int) -> int:
        """The rough estimate of the rows from ``index`` on (rows appended since a usage anchor)."""
        return self._rough_cumulative[-1] - self._rough_cumulative[min(index, len(self.rows))]
