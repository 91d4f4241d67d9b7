"""The recall tools: ``lcm_grep``, ``lcm_describe``, ``lcm_expand`` (JSON results, fixed ordering)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from .store import LiteralCorpus, Node, Row, Store

SNIPPET_CHARS = 200
_T = TypeVar("_T")

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "description": "Search the whole conversation history (messages and summaries), compacted parts too.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Regex (mode=regex) or words that must all occur (mode=fts)",
                },
                "mode": {"type": "string", "enum": ["regex", "fts"]},
                "scope": {"type": "string", "enum": ["messages", "summaries", "both"]},
                "limit": {"type": "integer", "minimum": 1},
                "sort": {"type": "string", "enum": ["recency", "relevance"]},
            },
            "required": ["query"],
        },
    },
    {
        "name": "lcm_describe",
        "description": "Metadata of a summary or message id: depth, links, sources, tokens, full text.",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    },
    {
        "name": "lcm_expand",
        "description": "The source messages (or child summaries) of a summary id, in order, paginated.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "max_tokens": {"type": "integer", "minimum": 1},
                "cursor": {"type": "integer", "minimum": 0},
            },
            "required": ["id"],
        },
    },
]


def _snippet(text: str, start: int, end: int) -> str:
    half = max(0, (SNIPPET_CHARS - (end - start)) // 2)
    lo = max(0, start - half)
    return text[lo : lo + SNIPPET_CHARS].replace("\n", " ")


def _literal(query: str) -> str | None:
    """The plain text a regex stands for when it is exactly ``re.escape`` of that text, else None."""
    text = re.sub(r"\\(.)", r"\1", query, flags=re.DOTALL)
    return text if re.escape(text) == query else None


def grep(store: Store, args: dict[str, Any]) -> dict[str, Any]:
    query = str(args.get("query") or "")
    mode = str(args.get("mode") or "regex")
    scope = str(args.get("scope") or "both")
    limit = max(1, int(args.get("limit") or 20))
    sort = str(args.get("sort") or "recency")
    if not query:
        return {"error": "query must be a non-empty string"}
    if (
        mode not in ("regex", "fts")
        or scope not in ("messages", "summaries", "both")
        or sort not in ("recency", "relevance")
    ):
        return {"error": "mode must be regex|fts, scope messages|summaries|both, sort recency|relevance"}
    lowered = store.lowered
    # What the folded corpus answers: a regex that is a plain ASCII text (that text, lowered), or
    # the words of a word search when all are ASCII (a row holding every one matches).
    needles: list[str] | None = None
    if mode == "regex":
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except re.error as error:
            return {"error": f"invalid regex: {error}"}
        literal = _literal(query)
        if literal is not None and literal.isascii() and "\x00" not in literal:
            needles = [literal.lower()]

        def hits(text: str) -> tuple[int, int, int]:
            found = list(pattern.finditer(text))
            return (len(found), found[0].start(), found[0].end()) if found else (0, 0, 0)
    else:
        terms = [t for t in re.findall(r"\w+", query.lower()) if t]
        if terms and all(map(str.isascii, terms)):
            needles = terms

        def hits(text: str) -> tuple[int, int, int]:
            low = lowered(text)
            if not terms or not all(t in low for t in terms):
                return 0, 0, 0
            at = low.find(terms[0])
            return sum(low.count(t) for t in terms), at, at + len(terms[0])

    # Every match as (count, position, what its entry is built from); only the entries returned are
    # built (a common literal matches hundreds of rows, and a result lists `limit`). A literal's
    # matches are counted only when the order reads the counts; by recency (position, summaries after
    # every message), only the last `limit` matches of each part can be returned.
    counted = sort == "relevance"
    last = None if counted else limit
    found: list[tuple[int, int, Row | Node, int, int]] = []
    total = 0
    if scope in ("messages", "both"):
        rows = store.rows
        matched, n = _matched(len(rows), lambda p: rows[p].text, needles, store.row_corpus, hits, counted, last)
        found.extend((count, p, rows[p], start, end) for p, count, start, end in matched)
        total += n
    if scope in ("summaries", "both"):
        nodes = [store.nodes[node_id] for node_id in store.order]
        matched, n = _matched(len(nodes), lambda p: nodes[p].text, needles, store.node_corpus, hits, counted, last)
        offset = len(store.rows)  # summaries rank after every message
        found.extend((count, offset + p, nodes[p], start, end) for p, count, start, end in matched)
        total += n
    if counted:
        found.sort(key=lambda f: (-f[0], -f[1]))
    else:
        found.sort(key=lambda f: -f[1])
    covering = store.covering()
    return {
        "query": query,
        "mode": mode,
        "scope": scope,
        "total": total,
        "matches": [_match(store, covering, item, start, end) for _count, _p, item, start, end in found[:limit]],
    }


def _matched(
    n: int,
    text_of: Callable[[int], str],
    needles: list[str] | None,
    corpus: Callable[[], LiteralCorpus],
    hits: Callable[[str], tuple[int, int, int]],
    counted: bool,
    last: int | None,
) -> tuple[list[tuple[int, int, int, int]], int]:
    """``(position, count, start, end)`` of the first match in each of ``n`` texts that holds any,
    in position order (only the ``last`` ones, unless None), and how many texts hold one. Lowered
    ASCII ``needles`` without NUL are found by the store's incremental search of the folded texts
    (``corpus``): a text matches when it holds every one, its count is the sum of theirs, its match
    the first needle's first; with no needles, ``hits`` runs on every text. Unless ``counted``, a
    text's count is given as 1 (it matches: an order by recency reads no more)."""
    if needles is None:
        matched = [match for match in [(p, *hits(text_of(p))) for p in range(n)] if match[1]]
        return _tail(matched, last), len(matched)
    searched = corpus()
    found = searched.hits(needles[0])
    for other in needles[1:]:
        held = {p for p, _at in searched.hits(other)}
        found = [hit for hit in found if hit[0] in held]
    if counted:
        count = searched.count
        matched = [(p, sum(count(needle, p) for needle in needles), at, at + len(needles[0])) for p, at in found]
    else:
        matched = [(p, 1, at, at + len(needles[0])) for p, at in _tail(found, last)]
    return matched, len(found)


def _tail(items: list[_T], last: int | None) -> list[_T]:
    """The ``last`` items (all of them when None)."""
    return items if last is None else items[len(items) - min(last, len(items)) :]


def _match(store: Store, covering: dict[str, str], item: Row | Node, start: int, end: int) -> dict[str, Any]:
    """One ``lcm_grep`` match: the row or summary, its covering summary and a snippet around the hit."""
    if isinstance(item, Row):
        leaf = covering.get(item.store_id)
        return {
            "id": item.store_id,
            "kind": "message",
            "role": item.role,
            "turn": item.turn,
            "tool": item.tool or None,
            "covering_summary": store.top(leaf) if leaf else None,
            "snippet": _snippet(item.text, start, end),
        }
    return {
        "id": item.id,
        "kind": "summary",
        "depth": item.depth,
        "turn": item.turn_range[1],
        "covering_summary": store.top(item.id),
        "snippet": _snippet(item.text, start, end),
    }


def _node_dict(store: Store, node: Node, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": node.id,
        "kind": "summary",
        "depth": node.depth,
        "level": node.level,
        "turn_range": list(node.turn_range),
        "token_count": node.token_count,
        "parent_id": node.parent_id,
        "child_ids": list(node.child_ids),
        "source_ids": list(node.source_ids),
        "expand_hint": node.expand_hint,
    }
    if full:
        out["text"] = node.text
    return out


def _row_dict(store: Store, row: Row, text: str | None = None) -> dict[str, Any]:
    leaf = store.covering().get(row.store_id)
    out: dict[str, Any] = {
        "id": row.store_id,
        "kind": "message",
        "role": row.role,
        "turn": row.turn,
        "tool": row.tool or None,
        "chars": len(row.text),
        "covering_summary": store.top(leaf) if leaf else None,
    }
    if text is not None:
        out["text"] = text
    return out


def describe(store: Store, args: dict[str, Any]) -> dict[str, Any]:
    ident = str(args.get("id") or "")
    if ident in store.nodes:
        return _node_dict(store, store.nodes[ident], full=True)
    if ident in store.by_id:
        return _row_dict(store, store.by_id[ident], store.by_id[ident].text)
    return {"error": f"unknown id {ident!r}"}


def expand(store: Store, args: dict[str, Any]) -> dict[str, Any]:
    ident = str(args.get("id") or "")
    max_tokens = max(1, int(args.get("max_tokens") or 4000))
    cursor = max(0, int(args.get("cursor") or 0))
    budget = max_tokens * 4  # the chars/4 estimate the host uses
    if ident in store.by_id:
        row = store.by_id[ident]
        piece = row.text[cursor : cursor + budget]
        following = cursor + len(piece)
        return {
            "id": ident,
            "items": [_row_dict(store, row, piece)],
            "next_cursor": following if following < len(row.text) else None,
        }
    if ident not in store.nodes:
        return {"error": f"unknown id {ident!r}"}
    node = store.nodes[ident]
    items: list[dict[str, Any]] = []
    if node.child_ids:
        sources: list[dict[str, Any]] = [_node_dict(store, store.nodes[c], full=True) for c in node.child_ids]
    else:
        sources = [_row_dict(store, store.by_id[s], store.by_id[s].text) for s in node.source_ids]
    spent = 0
    index = cursor
    while index < len(sources):
        size = len(str(sources[index].get("text", "")))
        if items and spent + size > budget:
            break
        items.append(sources[index])
        spent += size
        index += 1
    return {
        "id": ident,
        "items": items,
        "next_cursor": index if index < len(sources) else None,
        "total_items": len(sources),
    }


def handle(store: Store, name: str, args: dict[str, Any]) -> str:
    if not isinstance(args, dict):
        return json.dumps({"error": "arguments must be an object"})
    handlers = {"lcm_grep": grep, "lcm_describe": describe, "lcm_expand": expand}
    handler = handlers.get(name)
    if handler is None:
        return json.dumps({"error": f"Unknown tool: {name}"})
    try:
        return json.dumps(handler(store, args), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        return json.dumps({"error": f"bad arguments for {name}: {error}"})
