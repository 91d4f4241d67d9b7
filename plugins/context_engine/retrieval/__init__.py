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

from typing import Any

import bm25s  # noqa: F401  (imported here so a missing extra marks the plugin unavailable)
from agent.context_engine import ContextEngine

from contextlab.engines import parts

from .ranking import query_terms, rank_groups, tokenize


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
        # One estimate per message per request; every sum below reuses it.
        costs = [self._tokens.message(m) for m in messages]
        if budget <= 0 or sum(costs) <= budget:
            return None
        head = parts.head_end(messages)
        recent = parts.safe_cut_at_or_before(messages, max(head, len(messages) - self.recent_messages))
        starts = parts.group_starts(messages, head, recent) if recent > head else []
        if not starts:
            return None
        bounds = list(zip(starts, [*starts[1:], recent], strict=True))
        keys = [_group_key(messages, s, e) for s, e in bounds]
        group_costs = [sum(costs[s:e]) for s, e in bounds]
        room = budget - sum(costs[:head]) - sum(costs[recent:])
        terms = query_terms(incoming_message, messages)
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
        chosen = {i for i, k in enumerate(keys) if k in previous or k not in seen}
        cost = sum(group_costs[i] for i in chosen)
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
        documents = [self._group_tokens(messages, s, e, key) for (s, e), key in zip(bounds, keys, strict=True)]
        order = rank_groups(documents, sorted(terms))
        chosen: set[int] = set()
        spent = 0
        fill = int(room * (1 - self.headroom))
        for i in order:
            cost = group_costs[i]
            if spent + cost <= fill:
                chosen.add(i)
                spent += cost
        return chosen

    def _group_tokens(self, messages: list[dict[str, Any]], start: int, end: int, key: str) -> list[str]:
        """BM25 terms of one group, tokenized once per (group, text) and then reused."""
        text = " ".join(parts.content_text(m) for m in messages[start:end])
        cache_key = (key, len(text), hash(text))
        found = self._token_cache.get(cache_key)
        if found is None:
            found = tokenize(text)
            self._token_cache[cache_key] = found
        return found

    def _emit(
        self,
        messages: list[dict[str, Any]],
        head: int,
        recent: int,
        bounds: list[tuple[int, int]],
        chosen: set[int],
    ) -> list[dict[str, Any]]:
        out = list(messages[:head])
        gap = 0
        for i, (s, e) in enumerate(bounds):
            if i in chosen:
                if gap:
                    out.append(_marker(gap, out[-1] if out else None, messages[s]))
                    gap = 0
                out.extend(messages[s:e])
            else:
                gap += 1
        if gap:
            out.append(_marker(gap, out[-1] if out else None, messages[recent] if recent < len(messages) else None))
        out.extend(messages[recent:])
        return out


def _marker(count: int, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    # A user-role marker next to a user message would be merged into it by the host's sanitizer,
    # changing that message's bytes whenever the count changes (a needless cache break).
    near_user = any(m is not None and m.get("role") == "user" for m in (before, after))
    role = "assistant" if near_user else "user"
    return {"role": role, "content": f"[… {count} earlier turn group{'s' if count != 1 else ''} omitted …]"}


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
