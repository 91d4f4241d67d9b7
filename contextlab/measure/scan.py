"""Finding probe targets in text: one Aho-Corasick pass per distinct payload (``docs/metrics.md`` §Cost).

:class:`TextIndex` answers "which of these literal texts occur in this payload" (overlapping
occurrences included, so a path and the file name inside it are both found). :class:`RowScans`
holds the answer, by target, for every payload seen (transcript rows and what replays send), shared
by every replay of that parsed transcript.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import chain

import ahocorasick_rs
import numpy as np

from contextlab.messages import strip_surrogates

_EMPTY: frozenset[int] = frozenset()


class TextIndex:
    """An automaton over literal ``texts``; :meth:`find` gives the positions (in ``texts``) of those
    occurring in a payload. Empty texts never occur."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        # Matches come back as the stored pattern objects (no tuple per match), mapped to positions.
        self._position = {text: i for i, text in enumerate(self.texts) if text}
        # Built on the first scan: a replay whose rows were all answered from the target store
        # (a passthrough replay of a file seen before) scans nothing.
        self._automaton: ahocorasick_rs.AhoCorasick | None = None

    def find(self, payload: str) -> set[int]:
        """Positions of the texts that occur in ``payload``."""
        return set(map(self._position.__getitem__, self.matched(payload)))

    def matched(self, payload: str) -> set[str]:
        """The texts that occur in ``payload``."""
        if not payload or not self._position:
            return set()
        if self._automaton is None:
            # The contiguous NFA scans the 3.9 MB of coding-agent's payloads in 18 ms against the default's
            # 24-26 (a DFA, 18 ms too, takes 34 ms to build against 6 ms), so a cold replay's first scans cost less.
            self._automaton = ahocorasick_rs.AhoCorasick(
                list(self._position), store_patterns=True, implementation=ahocorasick_rs.Implementation.ContiguousNFA
            )
        try:
            return set(self._automaton.find_matches_as_strings(payload, overlapping=True))
        except UnicodeEncodeError:  # a lone surrogate (a row not in the wire form): read as sent
            return set(self._automaton.find_matches_as_strings(strip_surrogates(payload), overlapping=True))


def targets_in(text_ids: Collection[int], targets_of_text: Sequence[tuple[int, ...]]) -> frozenset[int]:
    """The targets owning any of ``text_ids``."""
    if not text_ids:
        return _EMPTY
    if len(text_ids) == 1:
        return frozenset(targets_of_text[next(iter(text_ids))])
    return frozenset(chain.from_iterable(map(targets_of_text.__getitem__, text_ids)))


MEMO_PAYLOADS = 50_000
"""Distinct payloads whose answer a :class:`RowScans` keeps (host-rendered and engine-written rows
of every replay of the transcript; beyond this, new payloads are scanned every time)."""


class RowScans:
    """Which targets each payload contains: transcript rows, and any payload a replay sends.

    Every distinct payload is scanned once and its answer kept, so the replays of one parsed
    transcript (a sweep's engines) share the work; the transcript's own rows are scanned only when
    :meth:`rows` is first needed (mining, or ranking a compaction diff by later uses).

    Args:
        index: Automaton over every target text (and, while mining, candidate fact texts).
        target_texts: The texts of each target, in target order.
        payloads: The transcript rows' payloads, in row order.
    """

    def __init__(self, index: TextIndex, target_texts: Sequence[Sequence[str]], payloads: Sequence[str]) -> None:
        position = {text: i for i, text in enumerate(index.texts)}
        owners: list[list[int]] = [[] for _ in index.texts]
        for t, texts in enumerate(target_texts):
            for text in dict.fromkeys(texts):
                if text:
                    owners[position[text]].append(t)
        self.index = index
        self.targets_of_text = [tuple(o) for o in owners]
        # Text -> the targets holding it: a payload's matched texts map to targets in one C-level chain.
        self._owners = {text: self.targets_of_text[i] for text, i in position.items() if text}
        # Per text, a target whose only text it is: that target is found in a payload exactly when
        # the text occurs in it (see sole_owner).
        self._sole: dict[str, int] = {}
        for t, texts in enumerate(target_texts):
            distinct = set(texts)
            if len(distinct) == 1:
                self._sole.setdefault(next(iter(distinct)), t)
        self.payloads = list(payloads)
        self._memo: dict[str, frozenset[int]] = {}
        self._rows: list[frozenset[int]] | None = None
        self._occurrences: dict[int, tuple[int, ...]] | None = None

    def seed(self, row_text_ids: Sequence[Collection[int]]) -> None:
        """Take the rows' answers from an earlier pass of ``index`` (text positions per row)."""
        memo, rows = self._memo, []
        for payload, ids in zip(self.payloads, row_text_ids, strict=True):
            found = memo.get(payload)
            if found is None:  # each distinct payload's targets built once (a file read twice)
                found = memo[payload] = targets_in(ids, self.targets_of_text)
            rows.append(found)
        self._rows = rows

    def find(self, payload: str) -> frozenset[int]:
        """Targets whose text occurs in ``payload`` (scanned on first sight, then looked up)."""
        found = self._memo.get(payload)
        if found is None:
            texts = self.index.matched(payload)
            found = frozenset(chain.from_iterable(map(self._owners.__getitem__, texts))) if texts else _EMPTY
            if len(self._memo) < MEMO_PAYLOADS:
                self._memo[payload] = found
        return found

    def scanned(self, payload: str) -> frozenset[int] | None:
        """:meth:`find`'s answer for ``payload`` if it was scanned already (None: it was not; no scan)."""
        return self._memo.get(payload)

    def sole_owner(self, text: str) -> int | None:
        """A target whose only text is ``text`` (None: there is none): ``text`` occurs in a payload
        exactly when :meth:`find` of that payload holds this target."""
        return self._sole.get(text)

    def rows(self) -> list[frozenset[int]]:
        """Targets found in each transcript row."""
        if self._rows is None:
            self._rows = [self.find(payload) for payload in self.payloads]
        return self._rows

    def occurrences(self, message_index: Sequence[int]) -> dict[int, tuple[int, ...]]:
        """For every target, the transcript rows after its own (``message_index[t]``) that contain it.

        Computed once (the targets of a scan are fixed): every replay of the transcript reuses it."""
        if self._occurrences is not None:
            return self._occurrences
        # Every (row, target) incidence as two arrays, the later ones grouped by target with their
        # rows ascending: one sort instead of a list per target (a session has tens of thousands).
        rows = self.rows()
        sizes = list(map(len, rows))
        targets = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=sum(sizes))
        at = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
        later = at > np.asarray(message_index, dtype=np.int64)[targets] if len(targets) else np.zeros(0, dtype=bool)
        targets, at = targets[later], at[later]
        order = np.lexsort((at, targets))
        targets, at = targets[order], at[order]
        cuts = [0, *(np.flatnonzero(np.diff(targets)) + 1).tolist(), len(targets)]
        owners, found = targets[cuts[:-1]].tolist() if len(targets) else [], at.tolist()
        self._occurrences = {t: tuple(found[a:b]) for t, a, b in zip(owners, cuts[:-1], cuts[1:], strict=False)}
        return self._occurrences
