"""The immutable message store and the summary DAG of the ``lcm`` engine."""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick_rs

from contextlab.engines import parts
from contextlab.engines.casefold import fold_to_ascii

NODE_FLAG = "_lcm_node"
"""Underscore key naming the DAG node a summary row shows (persisted, never sent)."""


@dataclass(frozen=True)
class Row:
    """One ingested message, never changed afterwards (the first version the engine saw)."""

    store_id: str
    uid: str
    turn: int
    role: str
    tool: str
    text: str


@dataclass
class Node:
    """A summary: a leaf over store rows (depth 0) or a condensation of child nodes (depth > 0)."""

    id: str
    depth: int
    text: str
    source_ids: list[str]
    child_ids: list[str]
    turn_range: tuple[int, int]
    token_count: int
    expand_hint: str
    level: str
    parent_id: str | None = None


LITERAL_SEARCHES_KEPT = 4096
"""Needles whose hits a store keeps between searches (beyond this it starts over)."""


@dataclass
class _Chunk:
    """Consecutive folded texts joined by NUL, with each text's bounds; the texts are those at
    positions ``first``, ``first + 1``, ... of the list (every text is taken, in order)."""

    text: str
    starts: list[int]
    ends: list[int]
    first: int

    @property
    def last(self) -> int:
        """The list position of the chunk's last text."""
        return self.first + len(self.starts) - 1


class LiteralCorpus:
    """The texts of an append-only list folded to lowered ASCII (:func:`fold_to_ascii`: where a
    case-insensitive ``re`` literal would match), searchable for an ASCII literal without NUL by
    ``str.find`` over a few joined chunks (a search for a rare literal costs its hits, not a Python
    step per text).

    Each literal's hits are kept with how many texts they cover, so a repeated search (a recall
    oracle repeats each search at every commit) reads only the texts added since; and those are
    read once for every kept literal together, by one Aho-Corasick pass, not once per literal. Chunks
    are merged like a log-structured merge: a new chunk absorbs the last one while that is no
    longer, so there are O(log n) chunks and each character is copied O(log n) times, never the
    whole corpus per addition."""

    def __init__(self) -> None:
        self.seen = 0
        """Texts of the list taken so far."""
        self._chunks: list[_Chunk] = []
        self._hits: dict[str, tuple[int, list[tuple[int, int]]]] = {}
        self._automaton: tuple[list[str], ahocorasick_rs.AhoCorasick] | None = None
        """Kept literals and an automaton over them; built again when a quarter as many have come since."""
        self._outside: list[str] = []
        """Kept literals not in the automaton (each searched by ``str.find`` until it is rebuilt)."""

    def extend(self, texts: Sequence[str]) -> None:
        """Take the next ``texts`` of the list (those after the :attr:`seen` first)."""
        lowered: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        offset = 0
        for text in texts:
            low = fold_to_ascii(text)
            starts.append(offset)
            ends.append(offset + len(low))
            lowered.append(low)
            offset += len(low) + 1  # NUL between texts keeps every match inside one
        if not lowered:
            return
        chunk = _Chunk("\x00".join(lowered), starts, ends, self.seen)
        self.seen += len(texts)
        while self._chunks and len(self._chunks[-1].text) <= len(chunk.text):
            chunk = _joined(self._chunks.pop(), chunk)
        self._chunks.append(chunk)

    def hits(self, needle: str) -> list[tuple[int, int]]:
        """``(position, first start)`` of every taken folded text holding ``needle`` (lowered ASCII,
        no NUL), in list order."""
        kept = self._hits.get(needle)
        if kept is None:
            if len(self._hits) >= LITERAL_SEARCHES_KEPT:
                self._hits.clear()
                self._automaton, self._outside = None, []
            self._hits[needle] = (self.seen, self._search(needle, 0))  # extended in place later
            self._outside.append(needle)
        elif kept[0] < self.seen:
            self._catch_up()
        return list(self._hits[needle][1])  # callers get a copy

    def count(self, needle: str, position: int) -> int:
        """``str.count`` of ``needle`` in the folded text at ``position`` (taken, folded)."""
        for chunk in self._chunks:
            if chunk.first <= position <= chunk.last:
                k = position - chunk.first
                return chunk.text.count(needle, chunk.starts[k], chunk.ends[k])
        raise ValueError(f"no folded text taken at position {position}")

    def _search(self, needle: str, since: int) -> list[tuple[int, int]]:
        """The hits of ``needle`` in the texts from position ``since`` on, by ``str.find`` over the
        chunks that hold them (a search for a rare literal costs its hits)."""
        found: list[tuple[int, int]] = []
        for chunk in self._chunks:
            if chunk.last < since:
                continue
            text, starts, ends = chunk.text, chunk.starts, chunk.ends
            at = text.find(needle, starts[max(0, since - chunk.first)])
            while at != -1:
                k = bisect_right(starts, at) - 1
                found.append((chunk.first + k, at - starts[k]))
                at = text.find(needle, ends[k])
        return found

    def _catch_up(self) -> None:
        """Extend every kept literal's hits over the texts taken since it was last searched: one
        overlapping Aho-Corasick pass over those texts reports every occurrence of every literal in
        the automaton (none holds a NUL, so none spans two texts), the first in each text is its
        first start; the few kept since it was built are searched one by one."""
        if self._automaton is None or 4 * len(self._outside) > len(self._automaton[0]):
            literals = list(self._hits)
            # A DFA: it scans four times as fast as a str.find per literal for a few dozen literals (a
            # recall oracle's keys), and builds in a third of a millisecond for 50 of them, so it is
            # built again only when the literals outside it have grown by a quarter.
            self._automaton = (literals, ahocorasick_rs.AhoCorasick(literals, implementation=_DFA))
            self._outside = []
        for literal in self._outside:
            since, found = self._hits[literal]
            found += self._search(literal, since)
        literals, automaton = self._automaton
        covered = [self._hits[literal][0] for literal in literals]
        first = min(covered)
        for chunk in self._chunks:
            if chunk.last < first:
                continue
            starts = chunk.starts
            offset = starts[max(0, first - chunk.first)]
            earliest: dict[tuple[int, int], int] = {}  # (text in the chunk, literal) -> first start
            for which, at, _end in automaton.find_matches_as_indexes(chunk.text[offset:], overlapping=True):
                at += offset
                earliest.setdefault((bisect_right(starts, at) - 1, which), at)  # matches come by end
            for (k, which), at in sorted(earliest.items()):
                if chunk.first + k >= covered[which]:  # hits below are kept already
                    self._hits[literals[which]][1].append((chunk.first + k, at - starts[k]))
        for literal in [*literals, *self._outside]:
            self._hits[literal] = (self.seen, self._hits[literal][1])


_DFA = ahocorasick_rs.Implementation.DFA


def _joined(first: _Chunk, second: _Chunk) -> _Chunk:
    """One chunk holding ``first``'s texts, then ``second``'s."""
    shift = len(first.text) + 1
    return _Chunk(
        first.text + "\x00" + second.text,
        first.starts + [start + shift for start in second.starts],
        first.ends + [end + shift for end in second.ends],
        first.first,
    )


@dataclass
class Store:
    """Rows by store id (``m<n>``) and uid; nodes by id (``sum_<sha256[:16]>``)."""

    rows: list[Row] = field(default_factory=list)
    by_uid: dict[str, Row] = field(default_factory=dict)
    by_id: dict[str, Row] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    turn: int = 0
    _uidless: int = 0
    # Caches (two stores of the same rows and nodes are equal whatever was searched): the covering
    # map, lowered texts, and the folded texts of the rows and of the summaries in DAG order,
    # searchable for a literal incrementally (both lists only grow, and a stored text never changes).
    _covering: dict[str, str] | None = field(default=None, repr=False, compare=False)
    _lowered: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _row_corpus: LiteralCorpus = field(default_factory=LiteralCorpus, repr=False, compare=False)
    _node_corpus: LiteralCorpus = field(default_factory=LiteralCorpus, repr=False, compare=False)

    def ingest(self, messages: list[dict[str, Any]]) -> None:
        """Add every message not seen yet (keyed by ``message_uid``; summary rows are skipped)."""
        names = parts.tool_names_by_call_id(messages)
        for message in messages:
            if message.get(NODE_FLAG):
                continue
            uid = message.get("message_uid")
            if not isinstance(uid, str) or not uid:
                # No identity yet (a preflight before the turn-start flush): key it by content.
                uid = "content:" + hashlib.sha256(repr(parts.content_text(message)).encode()).hexdigest()[:24]
            if uid in self.by_uid:
                continue
            role = str(message.get("role"))
            if role == "user":
                self.turn += 1
            text = parts.content_text(message)
            calls = parts.tool_calls(message)
            if calls:
                rendered = "; ".join(f"{parts.tool_call_name(c)}({parts.tool_call_arguments(c)})" for c in calls)
                text = f"{text}\n[tool calls] {rendered}" if text else f"[tool calls] {rendered}"
            tool = names.get(str(message.get("tool_call_id") or ""), "") if role == "tool" else ""
            row = Row(f"m{len(self.rows) + 1}", uid, self.turn, role, tool, text)
            self.rows.append(row)
            self.by_uid[uid] = row
            self.by_id[row.store_id] = row

    def row_for(self, message: dict[str, Any]) -> Row | None:
        uid = message.get("message_uid")
        if isinstance(uid, str) and uid in self.by_uid:
            return self.by_uid[uid]
        key = "content:" + hashlib.sha256(repr(parts.content_text(message)).encode()).hexdigest()[:24]
        return self.by_uid.get(key)

    def add_node(self, node: Node) -> Node:
        if node.id in self.nodes:
            self._covering = None  # a node replaced in its place: the map is built again when read
        else:
            self.order.append(node.id)
            if self._covering is not None:
                # A node added last covers only the rows no earlier node covers: what building the
                # map again (first node in order wins) would give, without a pass over every node.
                for source in node.source_ids:
                    self._covering.setdefault(source, node.id)
        self.nodes[node.id] = node
        for child in node.child_ids:
            self.nodes[child].parent_id = node.id
        return node

    def top(self, node_id: str) -> str:
        """The uncondensed ancestor of a node (what the context shows)."""
        node = self.nodes[node_id]
        while node.parent_id is not None:
            node = self.nodes[node.parent_id]
        return node.id

    def covering(self) -> dict[str, str]:
        """store id → the id of the first node in :attr:`order` that summarizes it (built once, then
        kept up to date as nodes are added; callers only read it)."""
        if self._covering is not None:
            return self._covering
        out: dict[str, str] = {}
        for node_id in self.order:
            node = self.nodes[node_id]
            for source in node.source_ids:
                out.setdefault(source, node.id)
        self._covering = out
        return out

    def row_corpus(self) -> LiteralCorpus:
        """The rows' folded texts, searchable for a literal (taken up to the last row; a
        row's position is its index in :attr:`rows`)."""
        corpus = self._row_corpus
        corpus.extend([row.text for row in self.rows[corpus.seen :]])
        return corpus

    def node_corpus(self) -> LiteralCorpus:
        """:meth:`row_corpus` over the summaries' texts, by position in :attr:`order`."""
        corpus = self._node_corpus
        corpus.extend([self.nodes[node_id].text for node_id in self.order[corpus.seen :]])
        return corpus

    def lowered(self, text: str) -> str:
        """``text.lower()``, computed once per stored text (every word search lowers every row)."""
        low = self._lowered.get(text)
        if low is None:
            low = self._lowered[text] = text.lower()
        return low


def node_id(text: str) -> str:
    return "sum_" + hashlib.sha256(text.encode()).hexdigest()[:16]
