"""``retrieval``: per-request BM25 selection within a budget (engines.md §5 E6).

When the conversation no longer fits ``budget_fraction`` of the window, each request keeps the
head (system + first user message) and the newest ``recent_messages``, and fills the rest of the
budget with the older safe groups that score best under BM25 (``bm25s``) for the query
"incoming user message + last assistant message". Gaps get a one-line marker. With ``sticky`` the
previous selection is reused (and only extended by groups that age out of the recent block) until
the query's term set changes (Jaccard < 0.5) or the budget is exceeded, so unchanged requests get
an equal list. Depends on ``bm25s`` (the ``[retrieval]`` extra) and ``contextlab.engines.parts``.

A request costs what changed since the previous one (``docs/performance.md``, ``retrieval``): the
older groups are kept in a :class:`~.groups.GroupTable`, the BM25 index only gains the groups that
aged out of the recent block, and a ranking scores the postings of the query's terms, orders the
groups and fills the budget in numpy. The selections are the plain computation's (tested).
"""

from __future__ import annotations

from itertools import compress
from operator import not_, or_
from typing import Any

import bm25s  # noqa: F401  (imported here so a missing extra marks the plugin unavailable)
import numpy as np
from agent.context_engine import ContextEngine

from contextlab.engines import parts

from .groups import GroupTable
from .ranking import (
    BM25Index,
    TermCounts,
    elements,
    greedy_fill,
    query_terms,
    rank_groups,
    rank_slots,
    term_counts,
    tokenize,
)


class RetrievalEngine(ContextEngine):
    """Per-request BM25 selection of older turn groups (RAG / topic routing; lossless-claw eviction).

    Args:
        budget_fraction: Share of the window a selected request may use.
        recent_messages: Newest messages always kept (extended back to a safe cut).
        sticky: Reuse the previous selection while the query is similar and the budget holds.
        jaccard_threshold: Query term-set similarity under which a sticky selection is redone.
        headroom: Share of the selectable budget a fresh selection leaves free, so a sticky
            selection can absorb the groups that age out of the recent block before it must be redone.
        min_group_fraction: Smallest turn group, as a share of the budget: consecutive turns are
            merged until a group holds that much, so a selection has at most about
            ``1 / min_group_fraction`` groups (and gap markers) however long the session is;
            the turns after the last whole group stay with the recent block. 0 (the default)
            makes every turn its own group.
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
        min_group_fraction: float = 0.0,
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
        if not 0 <= min_group_fraction <= 1:
            raise ValueError(f"min_group_fraction must be in [0, 1], got {min_group_fraction}")
        self.min_group_fraction = float(min_group_fraction)
        self.hard_cap_fraction = float(hard_cap_fraction)
        self.threshold_percent = self.hard_cap_fraction
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.hard_cap_fraction)
        self.reselections = 0
        self._tokens = parts.TokenEstimator()
        self._terms: frozenset[str] = frozenset()  # the query terms of the last selection
        # The term counts of each group's text (tokenized once; the counts, not the token lists, are
        # kept: BM25 reads only term frequencies and lengths, and a long session holds millions of words).
        self._token_cache: dict[tuple[str, int, int], TermCounts] = {}
        # Incremental state (docs/performance.md): per-row state of the previous request (cumulative
        # estimates, safe cuts; ``_rows`` changes when the rows are not the ones seen before), the
        # older groups (extended as the recent block moves on) and their documents, and the BM25
        # index of the groups ranked last.
        self._last_rows: list[dict[str, Any]] = []
        self._cum: list[int] = [0]
        self._safe: list[bool] = []
        self._rows = 0
        self._groups = GroupTable()
        self._docs: list[tuple[str, int, int]] = []  # the document key of each group (so far)
        self._docs_epoch = -1
        self._index = BM25Index()
        self._ranked: tuple[int, int] | None = None  # (epoch, k): the index holds groups [0, k)
        self._slots: Any = np.zeros(0, dtype=np.int64)  # the index slots of those groups
        # The last selection: (group epoch, groups then, chosen group indices, their cost, group keys).
        self._choice: tuple[int, int, set[int], int, list[str]] | None = None
        self._markers: dict[tuple[str, int], tuple[dict[str, Any], dict[str, Any]]] = {}
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
        # The older groups, kept from the previous request: only the groups that aged out of the
        # recent block since then run Python code (docs/performance.md).
        groups = self._groups
        min_cost = int(budget * self.min_group_fraction)
        groups.update(messages, cum, self._safe, head, recent, rows=self._rows, key_of=_group_key, min_cost=min_cost)
        if not len(groups):
            return None
        recent = groups.end  # the turns after the last whole group stay with the recent block
        room = budget - cum[head] - (total - cum[recent])
        terms = query_terms(incoming_message, messages, self._query_memo)
        found = self._sticky_choice(terms, room)
        if found is None:
            found = self._reselect(messages, terms, room)
        chosen, cost = found
        self._terms = terms
        self._choice = (groups.epoch, len(groups), chosen, cost, groups.keys)
        return self._emit(messages, head, recent, chosen)

    def _sticky_choice(self, terms: frozenset[str], room: int) -> tuple[set[int], int] | None:
        """Reuse the previous selection plus the groups that just aged out of the recent block."""
        if not self.sticky or self._choice is None or _jaccard(terms, self._terms) < self.jaccard_threshold:
            return None
        groups = self._groups
        epoch, seen_count, previous_chosen, previous_cost, previous_keys = self._choice
        n = len(groups)
        if epoch == groups.epoch and groups.unique:
            # The previous request's groups, in order, plus new ones, no two with one key: the groups
            # kept are the ones chosen then and the new ones (what the key sets below give).
            chosen = previous_chosen | set(range(seen_count, n))
            cost = previous_cost + sum(groups.costs[seen_count:n])
        else:
            previous = frozenset(previous_keys[i] for i in previous_chosen)
            seen = frozenset(previous_keys[:seen_count])
            # A group not among last request's older groups was in its recent block (the request
            # included it), so keeping it keeps the request append-only.
            keys = groups.keys
            keep = map(or_, map(previous.__contains__, keys), map(not_, map(seen.__contains__, keys)))
            chosen = set(compress(range(n), keep))
            cost = sum(map(groups.costs.__getitem__, chosen))
        return (chosen, cost) if cost <= room else None

    def _reselect(self, messages: list[dict[str, Any]], terms: frozenset[str], room: int) -> tuple[set[int], int]:
        """The groups in BM25 order that fit ``room`` less the headroom (greedily, in that order)."""
        self.reselections += 1
        order = self._rank(messages, sorted(terms))
        costs = self._groups.cost_array()
        taken = greedy_fill(order, costs, int(room * (1 - self.headroom)))
        return set(taken.tolist()), int(costs[taken].sum())

    def _sync(self, messages: list[dict[str, Any]]) -> list[int]:
        """Per-row state for ``messages``: reused for the rows the previous request had, computed
        for the rest. Returns the cumulative estimates.

        The state is a function of the rows' content, so it carries over while the previous rows
        come first again: the very same objects (what a host that extends its requests hands out:
        the list comparison takes them by identity, at C speed) or equal copies.
        """
        last = self._last_rows
        known = len(last)
        if known <= len(messages) and messages[:known] == last:
            last += messages[known:]
        else:
            known = 0
            self._cum, self._safe = [0], []
            self._rows += 1  # the group table starts over
            self._last_rows = list(messages)
        cum = self._cum
        for m in messages[known:]:
            cum.append(cum[-1] + self._tokens.message(m))
            self._safe.append(m.get("role") != "tool")
        return cum

    def _rank(self, messages: list[dict[str, Any]], terms: list[str]) -> Any:
        """Group indices by BM25 score (an int64 array), from the index kept in step with the groups."""
        groups = self._groups
        n = len(groups)
        if self._docs_epoch != groups.epoch:
            self._docs, self._docs_epoch = [], groups.epoch
        docs = self._docs
        for i in range(len(docs), n):
            docs.append(self._doc_key(messages, groups.starts[i], groups.ends[i], groups.keys[i]))
        index = self._index
        ranked = self._ranked
        if ranked is not None and ranked[0] == groups.epoch and ranked[1] <= n:
            fresh = docs[ranked[1] : n]
            if not any(map(index.__contains__, fresh)) and len(set(fresh)) == len(fresh):
                # The groups of the last ranking plus new ones (the common case): the index holds
                # exactly the old ones, so nothing leaves and only the new groups are added.
                for doc in fresh:
                    index.add_terms(doc, self._token_cache[doc])
                if fresh:
                    added = np.fromiter(map(index.slot, fresh), dtype=np.int64, count=len(fresh))
                    self._slots = np.concatenate((self._slots, added))
                self._ranked = (groups.epoch, n)
                return rank_slots(index, self._slots, terms)
        self._ranked = None
        live = set(docs)
        if len(live) != n:  # two groups with one document key: score them the plain way
            documents = [elements(self._token_cache[d]) for d in docs]  # BM25 ignores word order
            return np.array(rank_groups(documents, terms), dtype=np.int64)
        indexed = index.keys()
        for gone in indexed - live:
            index.remove(gone)
        for doc in docs:  # groups that aged out of the recent block since the last ranking
            if doc not in indexed:
                index.add_terms(doc, self._token_cache[doc])
        self._slots = np.fromiter(map(index.slot, docs), dtype=np.int64, count=n)
        self._ranked = (groups.epoch, n)
        return rank_slots(index, self._slots, terms)

    def _doc_key(self, messages: list[dict[str, Any]], start: int, end: int, key: str) -> tuple[str, int, int]:
        """The (group, text) key of one group; its terms are tokenized once and then reused."""
        text = " ".join(parts.content_text(m) for m in messages[start:end])
        cache_key = (key, len(text), hash(text))
        if cache_key not in self._token_cache:
            self._token_cache[cache_key] = term_counts(tokenize(text))
        return cache_key

    def _emit(
        self,
        messages: list[dict[str, Any]],
        head: int,
        recent: int,
        chosen: set[int],
    ) -> list[dict[str, Any]]:
        out = messages[:head]
        groups = self._groups
        starts, ends = groups.starts, groups.ends
        opens_with_user, closes_with_user = groups.opens_with_user, groups.closes_with_user
        marker = self._marker
        # The chosen groups in order, a marker for each run of skipped groups between them: the
        # work is per chosen group, not per group. A marker's neighbours are the row before it (the
        # last row of the previous chosen group, or of the head) and the first row of the next group.
        done = 0  # groups before this index are emitted or counted in a marker
        user_before = head > 0 and messages[head - 1].get("role") == "user"
        for i in sorted(chosen):
            s = starts[i]
            if i > done:
                out.append(marker(i - done, user_before or opens_with_user[i]))
            out += messages[s : ends[i]]
            done = i + 1
            user_before = closes_with_user[i]
        gap = len(starts) - done
        if gap:
            after_user = recent < len(messages) and messages[recent].get("role") == "user"
            out.append(marker(gap, user_before or after_user))
        out += messages[recent:]
        return out

    def _marker(self, count: int, near_user: bool) -> dict[str, Any]:
        """The gap marker for ``count`` skipped groups; ``near_user``: a user message is next to it."""
        # A user-role marker next to a user message would be merged into it by the host's sanitizer,
        # changing that message's bytes whenever the count changes (a needless cache break).
        role = "assistant" if near_user else "user"
        # One dict per distinct marker, reused while unchanged: a host can recognise it as already
        # seen. Kept per (role, count) with a private copy to check it against (one C-level compare).
        found = self._markers.get((role, count))
        if found is not None and found[0] == found[1]:
            return found[0]
        content = f"[… {count} earlier turn group{'s' if count != 1 else ''} omitted …]"
        marker = {"role": role, "content": content}
        self._markers[(role, count)] = (marker, dict(marker))
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
