"""The structure pass over ``select_context`` results, resumed where a result first differs from the
previous one (``docs/performance.md``, "Engine hooks").

A selection whose structure differs from the unselected request (markers, dropped groups) is checked
by feeding every row to a :class:`~contextlab.messages.StructureTracker`. Consecutive selections
usually share a leading run of rows (the head, the groups kept since), so the tracker's state is
saved every :data:`EVERY` rows and the next selection is fed from the last saved state at or before
its first changed row. Rows are compared through their structure signatures (the host reuses a
row's signature object exactly while the row is known unchanged), so a shared run is one C-level
identity scan. The result always equals a tracker fed the whole selection (tested).
"""

from __future__ import annotations

from itertools import compress
from operator import is_not
from typing import Any

from contextlab.engine import Message
from contextlab.messages import StructureTracker

EVERY = 16
"""Rows between saved tracker states (a save copies the tracker's containers, C-level)."""


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
