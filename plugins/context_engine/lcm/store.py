"""The immutable message store and the summary DAG of the ``lcm`` engine."""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from contextlab.engines import parts

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
class Store:
    """Rows by store id (``m<n>``) and uid; nodes by id (``sum_<sha256[:16]>``)."""

    rows: list[Row] = field(default_factory=list)
    by_uid: dict[str, Row] = field(default_factory=dict)
    by_id: dict[str, Row] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    turn: int = 0
    _uidless: int = 0
    _covering: dict[str, str] | None = field(default=None, repr=False)
    _lowered: dict[str, str] = field(default_factory=dict, repr=False)
    # The lowered ASCII row texts joined by NUL (extended when a search finds new rows), with each
    # text's bounds in it and its row position; the positions of the other rows.
    _corpus: str = field(default="", repr=False)
    _corpus_starts: list[int] = field(default_factory=list, repr=False)
    _corpus_ends: list[int] = field(default_factory=list, repr=False)
    _corpus_rows: list[int] = field(default_factory=list, repr=False)
    _non_ascii_rows: list[int] = field(default_factory=list, repr=False)
    _corpus_seen: int = field(default=0, repr=False)  # rows looked at so far
    # Per needle searched: how much of the corpus that search covered, and its hits there. The corpus
    # only grows (rows are never changed), so the next search of the needle reads only what came since.
    _literal_hits: dict[str, tuple[int, list[tuple[int, int, int]]]] = field(default_factory=dict, repr=False)

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
        self._covering = None  # the node may cover new rows
        if node.id not in self.nodes:
            self.order.append(node.id)
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
        """store id → the id of the leaf node that summarizes it (built once per change of the DAG;
        callers only read it)."""
        if self._covering is not None:
            return self._covering
        out: dict[str, str] = {}
        for node_id in self.order:
            node = self.nodes[node_id]
            for source in node.source_ids:
                out.setdefault(source, node.id)
        self._covering = out
        return out

    def ascii_literal_hits(self, needle: str) -> tuple[list[tuple[int, int, int]], list[int]]:
        """Where ``needle`` (lowered ASCII, no NUL) occurs in the lowered ASCII rows: ``(row position,
        count, first start)`` per row holding it, in row order, with ``str.count``'s non-overlapping
        count; and the positions of the non-ASCII rows, which the caller searches itself.

        One ``str.find`` pass over the joined texts (a search for a rare identifier costs its hits,
        not a Python step per stored row); NUL between the texts keeps every match inside one.
        """
        self._extend_corpus()
        corpus, starts, ends, rows = self._corpus, self._corpus_starts, self._corpus_ends, self._corpus_rows
        searched, found = self._literal_hits.get(needle, (0, []))
        if searched < len(corpus):
            # The part searched before is a prefix of the corpus, ending at a row's end: no match
            # spans it, and its hits are the same (a recall oracle repeats each search every commit).
            # The kept list is extended in place: callers only ever get a copy of it.
            at = corpus.find(needle, searched)
            while at != -1:
                k = bisect_right(starts, at) - 1
                found.append((rows[k], corpus.count(needle, starts[k], ends[k]), at - starts[k]))
                at = corpus.find(needle, ends[k])
            if len(self._literal_hits) >= LITERAL_SEARCHES_KEPT:
                self._literal_hits.clear()
            self._literal_hits[needle] = (len(corpus), found)
        return list(found), self._non_ascii_rows

    def _extend_corpus(self) -> None:
        """Join the lowered texts of the ASCII rows stored since the last search to the corpus."""
        texts: list[str] = []
        offset = len(self._corpus) + 1 if self._corpus_starts else 0  # after a NUL, if not first
        for position in range(self._corpus_seen, len(self.rows)):
            text = self.rows[position].text
            if not text.isascii():
                self._non_ascii_rows.append(position)
                continue
            low = text.lower()  # (not through the lowered() memo: the corpus is this text's copy)
            self._corpus_starts.append(offset)
            self._corpus_ends.append(offset + len(low))
            self._corpus_rows.append(position)
            texts.append(low)
            offset += len(low) + 1
        self._corpus_seen = len(self.rows)
        if texts:
            pieces = [self._corpus, *texts] if len(self._corpus_starts) > len(texts) else texts
            self._corpus = "\x00".join(pieces)

    def lowered(self, text: str) -> str:
        """``text.lower()``, computed once per stored text (every search lowers every row)."""
        low = self._lowered.get(text)
        if low is None:
            low = self._lowered[text] = text.lower()
        return low


def node_id(text: str) -> str:
    return "sum_" + hashlib.sha256(text.encode()).hexdigest()[:16]
