"""``retrieval``: per-request BM25 selection within a budget (engines.md §5 E6).

When the conversation no longer fits ``budget_fraction`` of the window, each request keeps the
head (system + first user message) and the newest ``recent_messages``, and fills the rest of the
budget with the older safe groups that score best under BM25 (``bm25s``) for the query
"incoming user message + last assistant message". Gaps get a one-line marker. With ``sticky`` the
previous selection is reused (and only extended by groups that age out of the recent block) until
the query's term set changes (Jaccard < 0.5) or the budget is exceeded, so unchanged requests get
an equal list. Depends on ``bm25s`` (the ``[retrieval]`` extra) and ``contextlab.engines.parts``.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import is_, not_, or_, sub
from typing import Any

import bm25s  # noqa: F401  (imported here so a missing extra marks the plugin unavailable)
from agent.context_engine import ContextEngine

from contextlab.engines import parts

from .ranking import BM25Index, query_terms, rank_groups, rank_indexed, tokenize


class RetrievalEngine(ContextEngine):
    """Per-request BM25 selection of older turn groups (RAG / topic routing; lossless-claw eviction).

    Args:
        budget_fraction: Share of the window a selected request may use.
        recent_messages: Newest messages always kept (extended back to a safe cut).
        sticky: Reuse the previous selection while the query is similar and the budget holds.
        jaccard_threshold: Query term-set similarity under which a sticky selection is redone.
        headroom: Share of the selectable budget a fresh selection leaves free, so a sticky
            selection can absorb the groups that age out of the recent block before it must be redone.
        hard_cap_fraction: Fraction of the window at which ``compress`` truncates (as ``mask_window``).
    """

    def __init__(
        self,
        budget_fraction: float = 0.5,
        recent_messages: int = 20,
        sticky: bool = True,
        jaccard_threshold: float = 0.5,
        headroom: float = 0.2,
        hard_cap_fraction: float = 0.95,
        context_length: int = 0,
    ) -> None:
        if not 0 < budget_fraction <= 1 or recent_messages < 1:
            raise ValueError("budget_fraction must be in (0, 1] and recent_messages >= 1")
        self.budget_fraction = float(budget_fraction)
        self.recent_messages = int(recent_messages)
        self.sticky = bool(sticky)
        self.jaccard_threshold = float(jaccard_threshold)
        if not 0 <= headroom < 1:
            raise ValueError(f"headroom must be in [0, 1), got {headroom}")
        self.headroom = float(headroom) if sticky else 0.0
        self.hard_cap_fraction = float(hard_cap_fraction)
        self.threshold_percent = self.hard_cap_fraction
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.hard_cap_fraction)
        self.reselections = 0
        self._tokens = parts.TokenEstimator()
        # Sticky state: the selected group keys (uid of each group's first row) and the query terms.
        self._selected: frozenset[str] | None = None
        self._terms: frozenset[str] = frozenset()
        self._seen: frozenset[str] = frozenset()
        self._token_cache: dict[tuple[str, int, int], list[str]] = {}
        # Incremental state (docs/performance.md): the BM25 index of the older groups, and per-row
        # state of the previous request (cumulative estimates, safe cuts, group keys and documents).
        self._index = BM25Index()
        self._last_rows: list[dict[str, Any]] = []
        self._cum: list[int] = [0]
        self._safe: list[bool] = []
        self._keys_at: dict[int, str] = {}
        self._docs_at: dict[tuple[int, int], tuple[str, int, int]] = {}
        self._markers: dict[tuple[str, str], dict[str, Any]] = {}
        self._query_memo: dict[str, frozenset[str]] = {}

    @property
    def name(self) -> str:
        return "retrieval"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        parts.track_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.threshold_tokens > 0 and parts.pressure(self, prompt_tokens) >= self.threshold_tokens

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        budget = int(self.context_length * self.budget_fraction) if self.context_length else 0
        if budget <= 0:
            return messages
        kept = parts.truncate_to_budget(messages, budget, self._tokens)
        if kept is not messages:
            self.compression_count += 1
        return kept

    # ------------------------------------------------------------------ selection

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
    ) -> list[dict[str, Any]] | None:
        window = budget_tokens or self.context_length
        budget = int(window * self.budget_fraction)
        messages = request_messages
        # One estimate per message; rows the previous request already had keep theirs.
        cum = self._sync(messages)  # cum[i]: estimate of messages[:i]
        total = cum[len(messages)]
        if budget <= 0 or total <= budget:
            return None
        head = parts.head_end(messages)
        recent = parts.safe_cut_at_or_before(messages, max(head, len(messages) - self.recent_messages))
        # Safe cuts (rows that are not tool results) are known per row: parts.group_starts, in C.
        starts = [head, *compress(range(head + 1, recent), self._safe[head + 1 : recent])] if recent > head else []
        if not starts:
            return None
        ends = [*starts[1:], recent]
        bounds = list(zip(starts, ends, strict=True))
        # Per-group values by C-level maps over per-row state kept since the previous request
        # (docs/performance.md); only the groups that are new since then run Python code.
        keys_at = self._keys_at
        keys: list[str] = list(map(keys_at.get, starts))  # type: ignore[arg-type]
        if None in keys:
            for i in compress(range(len(keys)), map(is_, keys, repeat(None))):
                keys[i] = keys_at.setdefault(starts[i], _group_key(messages, *bounds[i]))
        group_costs = list(map(sub, map(cum.__getitem__, ends), map(cum.__getitem__, starts)))
        room = budget - cum[head] - (total - cum[recent])
        terms = query_terms(incoming_message, messages, self._query_memo)
        chosen = self._sticky_choice(group_costs, keys, terms, room)
        if chosen is None:
            chosen = self._reselect(messages, bounds, keys, group_costs, terms, room)
        self._terms = terms
        self._selected = frozenset(keys[i] for i in chosen)
        self._seen = frozenset(keys)
        return self._emit(messages, head, recent, bounds, chosen)

    def _sticky_choice(
        self,
        group_costs: list[int],
        keys: list[str],
        terms: frozenset[str],
        room: int,
    ) -> set[int] | None:
        """Reuse the previous selection plus the groups that just aged out of the recent block."""
        if not self.sticky or self._selected is None or _jaccard(terms, self._terms) < self.jaccard_threshold:
            return None
        previous, seen = self._selected, self._seen
        # A group not among last request's older groups was in its recent block (the request
        # included it), so keeping it keeps the request append-only.
        keep = map(or_, map(previous.__contains__, keys), map(not_, map(seen.__contains__, keys)))
        chosen = set(compress(range(len(keys)), keep))
        cost = sum(map(group_costs.__getitem__, chosen))
        return chosen if cost <= room else None

    def _reselect(
        self,
        messages: list[dict[str, Any]],
        bounds: list[tuple[int, int]],
        keys: list[str],
        group_costs: list[int],
        terms: frozenset[str],
        room: int,
    ) -> set[int]:
        self.reselections += 1
        order = self._rank(messages, bounds, keys, sorted(terms))
        chosen: set[int] = set()
        spent = 0
        fill = int(room * (1 - self.headroom))
        for i in order:
            cost = group_costs[i]
            if spent + cost <= fill:
                chosen.add(i)
                spent += cost
        return chosen

    def _sync(self, messages: list[dict[str, Any]]) -> list[int]:
        """Per-row state for ``messages``: reused for the rows the previous request had (the very
        same objects, as a host that extends its requests hands them), computed for the rest.
        Returns the cumulative estimates."""
        known = len(self._last_rows)
        if not (known <= len(messages) and all(map(is_, self._last_rows, messages[:known]))):
            known = 0
            self._cum, self._safe, self._keys_at, self._docs_at = [0], [], {}, {}
        cum = self._cum
        for m in messages[known:]:
            cum.append(cum[-1] + self._tokens.message(m))
            self._safe.append(m.get("role") != "tool")
        self._last_rows = list(messages)
        return cum

    def _rank(
        self, messages: list[dict[str, Any]], bounds: list[tuple[int, int]], keys: list[str], terms: list[str]
    ) -> list[int]:
        """Group indices by BM25 score, from the incremental index kept in step with the groups."""
        # Groups at bounds read before (same rows, see _sync) keep their document key.
        docs_at = self._docs_at
        docs: list[tuple[str, int, int]] = list(map(docs_at.get, bounds))  # type: ignore[arg-type]
        if None in docs:
            for i in compress(range(len(docs)), map(is_, docs, repeat(None))):
                docs[i] = docs_at.setdefault(bounds[i], self._doc_key(messages, *bounds[i], keys[i]))
        live = set(docs)
        if len(live) != len(docs):  # two groups with one key: score them the plain way
            return rank_groups([self._token_cache[d] for d in docs], terms)
        index = self._index
        indexed = index.keys()
        for gone in indexed - live:
            index.remove(gone)
        for doc in live - indexed:  # groups that aged out of the recent block since the last ranking
            index.add(doc, self._token_cache[doc])
        return rank_indexed(index, docs, terms)

    def _doc_key(self, messages: list[dict[str, Any]], start: int, end: int, key: str) -> tuple[str, int, int]:
        """The (group, text) key of one group; its terms are tokenized once and then reused."""
        text = " ".join(parts.content_text(m) for m in messages[start:end])
        cache_key = (key, len(text), hash(text))
        if cache_key not in self._token_cache:
            self._token_cache[cache_key] = tokenize(text)
        return cache_key

    def _emit(
        self,
        messages: list[dict[str, Any]],
        head: int,
        recent: int,
        bounds: list[tuple[int, int]],
        chosen: set[int],
    ) -> list[dict[str, Any]]:
        out = list(messages[:head])
        # The chosen groups in order, a marker for each run of skipped groups between them: the
        # work is per chosen group, not per group.
        done = 0  # groups before this index are emitted or counted in a marker
        for i in sorted(chosen):
            s, e = bounds[i]
            if i > done:
                out.append(self._marker(i - done, out[-1] if out else None, messages[s]))
            out.extend(messages[s:e])
            done = i + 1
        gap = len(bounds) - done
        if gap:
            out.append(
                self._marker(gap, out[-1] if out else None, messages[recent] if recent < len(messages) else None)
            )
        out.extend(messages[recent:])
        return out

    def _marker(self, count: int, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
        # A user-role marker next to a user message would be merged into it by the host's sanitizer,
        # changing that message's bytes whenever the count changes (a needless cache break).
        near_user = any(m is not None and m.get("role") == "user" for m in (before, after))
        role = "assistant" if near_user else "user"
        content = f"[… {count} earlier turn group{'s' if count != 1 else ''} omitted …]"
        # One dict per distinct marker, reused while unchanged: a host can recognise it as already seen.
        marker = self._markers.get((role, content))
        # Still exactly {"role": role, "content": content} (compared without building that dict).
        if marker is None or len(marker) != 2 or marker.get("role") != role or marker.get("content") != content:
            marker = {"role": role, "content": content}
            self._markers[(role, content)] = marker
        return marker


def _group_key(messages: list[dict[str, Any]], start: int, end: int) -> str:
    first = messages[start]
    uid = first.get("message_uid")
    if isinstance(uid, str) and uid:
        return uid
    return parts.engine_uid("group", f"{start}:{parts.content_text(first)[:200]}")


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def register(ctx: Any) -> None:
    """General-plugin registration (the host's ``register(ctx)`` path)."""
    ctx.register_context_engine(RetrievalEngine())
