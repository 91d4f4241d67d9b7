"""``lcm``: lossless hierarchical summary DAG with recall tools (engines.md §5 E5).

Every message the engine sees is ingested once into an immutable store. When the prompt passes
``context_threshold`` of the window, ``compress`` summarizes the raw backlog outside the fresh tail
into leaf nodes (``leaf_chunk_tokens`` chunks at safe cuts, escalating L1 -> L2 -> L3 until the output
is shorter than its input), condenses ``condensation_fanin`` uncondensed nodes into a deeper node
while ``depth < max_depth``, and assembles ``[one row per uncondensed node, deepest first] + [fresh
tail]`` within an assembly budget: when the summaries do not fit, the oldest are left out of the
context (never the raw backlog or the fresh tail), as lossless-claw's assembler drops the oldest
evictable items (``docs/lcm.md``). Nothing is lost: ``lcm_grep`` / ``lcm_describe`` / ``lcm_expand``
reach every stored row and every node, left out or not. Depends on ``contextlab.engines``
(contextlab importable).
"""

from __future__ import annotations

import json
from typing import Any

from agent.context_engine import ContextEngine

from contextlab.engines import parts
from contextlab.engines.summarizers import ENGINES_TEMPLATE, ExtractiveSummarizer, SummaryRequest

from . import tools
from .store import NODE_FLAG, Node, Store, node_id

USAGE_NOTE = (
    "Older conversation is stored losslessly. Summaries below name their ids; use lcm_grep to search "
    "everything, lcm_describe(id) for a summary's sources and lcm_expand(id) to read them."
)
SUMMARY_HEADER = "[LCM summary"
L3_TOKENS = 512


class LcmEngine(ContextEngine):
    """Lossless context management: summary DAG over an immutable store, plus recall tools.

    Args:
        context_threshold: Share of the window where compaction fires (hermes-lcm: 0.75).
        fresh_tail_count: Newest messages kept raw (64); extended to the newest user message.
        fresh_tail_max_tokens: Cap on the fresh tail in tokens (None: a quarter of the threshold).
        leaf_chunk_tokens: Raw backlog size that justifies a leaf pass, and the chunk size (20,000).
        leaf_target_tokens: Budget of a leaf summary (2,400).
        condensation_fanin: Uncondensed nodes merged into one deeper node (4).
        max_depth: Deepest condensation level (1).
        condensed_target_tokens: Budget of a condensed node (2,000).
        leaf_mode: ``"chunked"`` (lossless-claw sweep) or ``"whole"`` (hermes-lcm v0.7: one leaf per pass).
        large_output_chars: Tool outputs longer than this are shown as a stub with their store id (12,000).
        max_assembly_tokens: Explicit cap on the assembled history in rough tokens (None: no cap of
            its own, as hermes-lcm's ``max_assembly_tokens`` 0 and lossless-claw's unset
            ``maxAssemblyTokenBudget``). The budget always applied is the host's: the threshold,
            less what the request carries besides the history, less the headroom of one leaf chunk
            (at most a quarter of the threshold); see :meth:`assembly_budget`.
    """

    def __init__(
        self,
        context_threshold: float = 0.75,
        fresh_tail_count: int = 64,
        fresh_tail_max_tokens: int | None = None,
        leaf_chunk_tokens: int = 20_000,
        leaf_target_tokens: int = 2_400,
        condensation_fanin: int = 4,
        max_depth: int = 1,
        condensed_target_tokens: int = 2_000,
        leaf_mode: str = "chunked",
        large_output_chars: int = 12_000,
        max_assembly_tokens: int | None = None,
        context_length: int = 0,
    ) -> None:
        if leaf_mode not in ("chunked", "whole"):
            raise ValueError(f"leaf_mode must be 'chunked' or 'whole', got {leaf_mode!r}")
        if condensation_fanin < 2 or max_depth < 0 or fresh_tail_count < 1:
            raise ValueError("need condensation_fanin >= 2, max_depth >= 0, fresh_tail_count >= 1")
        if max_assembly_tokens is not None and int(max_assembly_tokens) < 1:
            raise ValueError(f"max_assembly_tokens must be None or >= 1, got {max_assembly_tokens!r}")
        self.context_threshold = float(context_threshold)
        self.threshold_percent = self.context_threshold
        self.fresh_tail_count = int(fresh_tail_count)
        self.fresh_tail_max_tokens = fresh_tail_max_tokens
        self.leaf_chunk_tokens = int(leaf_chunk_tokens)
        self.leaf_target_tokens = int(leaf_target_tokens)
        self.condensation_fanin = int(condensation_fanin)
        self.max_depth = int(max_depth)
        self.condensed_target_tokens = int(condensed_target_tokens)
        self.leaf_mode = leaf_mode
        self.large_output_chars = int(large_output_chars)
        self.max_assembly_tokens = None if max_assembly_tokens is None else int(max_assembly_tokens)
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.context_threshold)
        self.store = Store()
        self._summarizer = ExtractiveSummarizer()
        self._tokens = parts.TokenEstimator()
        self._costs: dict[int, tuple[dict[str, Any], int]] = {}  # input rows of the running compress
        self.evicted: list[str] = []
        """Ids of the summaries the assembly budget left out, in the order they left (still stored)."""

    @property
    def name(self) -> str:
        return "lcm"

    # ------------------------------------------------------------------ host hooks

    def update_from_response(self, usage: dict[str, Any]) -> None:
        parts.track_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.threshold_tokens > 0 and parts.pressure(self, prompt_tokens) >= self.threshold_tokens

    def on_turn_complete(
        self, messages: list[dict[str, Any]], usage: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        self.store.ingest(messages)

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self.store = Store()
        self.evicted = []

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        schemas: list[dict[str, Any]] = json.loads(json.dumps(tools.SCHEMAS))  # a copy the host may keep
        return schemas

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        live = kwargs.get("messages")
        if isinstance(live, list):
            self.store.ingest([m for m in live if isinstance(m, dict)])
        return tools.handle(self.store, name, args)

    # ------------------------------------------------------------------ compaction

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        self.store.ingest(messages)
        # One estimate per input row for this call: the passes below sum the same rows many times.
        self._costs = {id(m): (m, self._tokens.message(m)) for m in messages}
        try:
            return self._compress(messages, current_tokens, focus_topic, force)
        finally:
            self._costs = {}

    def _compress(
        self, messages: list[dict[str, Any]], current_tokens: int | None, focus_topic: str | None, force: bool
    ) -> list[dict[str, Any]]:
        shown = [m[NODE_FLAG] for m in messages if m.get(NODE_FLAG) in self.store.nodes]
        raw = [m for m in messages if not m.get(NODE_FLAG)]
        # What the request carries besides the history (system prompt, tool schemas), from the host's figure.
        overhead = max(0, int(current_tokens or 0) - self._cost(messages))
        budget = self.assembly_budget(overhead)
        tail_start = self._tail_start(raw, extend_to_user=True)
        tops, leftover = self._passes(raw[:tail_start], shown, force, focus_topic)
        tail = [self._stub(m) for m in raw[tail_start:]]
        kept, dropped = self._fit(tops, leftover, tail, budget)
        result = self._assemble(kept, leftover, tail)
        if budget is not None and self._cost(result) > budget:
            # Overflow guard: the raw rows (backlog and fresh tail) do not fit the budget even with
            # every summary left out; cap the tail and sweep again. (The budget is under the
            # threshold less the overhead, so this covers a request that would still reach it.)
            tail_start = self._tail_start(raw, extend_to_user=False)
            tops, leftover = self._passes(raw[:tail_start], shown, True, focus_topic)
            tail = [self._stub(m) for m in raw[tail_start:]]
            kept, dropped = self._fit(tops, leftover, tail, budget)
            result = self._assemble(kept, leftover, tail)
        if (
            [m.get(NODE_FLAG) for m in result] == [m.get(NODE_FLAG) for m in messages]
            and len(result) == len(messages)
            and all(a is b for a, b in zip(result, messages, strict=True))
        ):
            return messages
        if self._cost(result) >= self._cost(messages):
            return messages
        self.compression_count += 1
        self.evicted.extend(dropped)
        return result

    def assembly_budget(self, overhead: int = 0) -> int | None:
        """The most rough tokens the assembled history may hold (None: no budget, no window known).

        The host compacts again whenever the request reaches the threshold, so that is the budget
        the host gives the engine (lossless-claw's assembler gets the runtime's token budget the
        same way). ``overhead`` is what the request carries besides the history. One leaf chunk of
        headroom (at most a quarter of the threshold) stays free so that the next compaction finds
        a full chunk of raw backlog to summarize instead of only summaries to leave out: a long
        session settles into one compaction per chunk of new conversation (``docs/lcm.md``).
        """
        caps: list[int] = []
        if self.max_assembly_tokens is not None:
            caps.append(self.max_assembly_tokens)
        if self.threshold_tokens > 0:
            headroom = min(self.leaf_chunk_tokens, self.threshold_tokens // 4)
            caps.append(self.threshold_tokens - overhead - headroom)
        return max(0, min(caps)) if caps else None

    def _fit(
        self, tops: list[str], leftover: list[dict[str, Any]], tail: list[dict[str, Any]], budget: int | None
    ) -> tuple[list[str], list[str]]:
        """(kept, left out): the uncondensed nodes that fit ``budget`` with the raw rows, in assembly
        order, and the older ones left out.

        Only summaries are evictable: the raw backlog is covered by no summary yet and the fresh
        tail holds the newest user message, so both always stay (lossless-claw never drops the
        fresh tail either). Assembly order is oldest first (deeper nodes cover older turns); the
        newest nodes are kept while they fit and everything older than the first that does not fit
        is left out, as lossless-claw's assembler fills its budget (``docs/lcm.md``).
        """
        ordered = self._ordered(tops)
        if budget is None or not ordered:
            return ordered, []
        room = budget - self._cost(leftover) - self._cost(tail)
        if self._cost(self._node_rows(ordered)) <= room:
            return ordered, []
        nodes = self.store.nodes
        plain = [self._cost([self._node_message(nodes[t], first=False)]) for t in ordered]
        start, spent = len(ordered), 0
        while start > 0:
            # The oldest kept row carries the usage note, so the candidate is priced as first.
            first = self._cost([self._node_message(nodes[ordered[start - 1]], first=True)])
            if spent + first > room:
                break
            spent += plain[start - 1]
            start -= 1
        return ordered[start:], ordered[:start]

    def _cost(self, rows: list[dict[str, Any]]) -> int:
        """The rough estimate of ``rows`` (the host's figure); the input rows of the running compress
        are read from its table (which holds them, so an id there is theirs)."""
        costs, estimate = self._costs, self._tokens.message
        total = 0
        for m in rows:
            known = costs.get(id(m))
            total += known[1] if known is not None and known[0] is m else estimate(m)
        return total

    def _tail_start(self, raw: list[dict[str, Any]], *, extend_to_user: bool) -> int:
        start = max(0, len(raw) - self.fresh_tail_count)
        if extend_to_user:
            newest = parts.newest_user_index(raw)
            if newest is not None and newest < start and self.fresh_tail_max_tokens is None:
                start = newest
        # The fresh tail is bounded by tokens too (default: a quarter of the threshold): in a
        # single-turn tool loop the newest user message is the first one, and a count tail extended
        # to it would cover the whole history. The newest message always stays raw.
        cap = self.fresh_tail_max_tokens
        if cap is None and self.threshold_tokens > 0:
            cap = max(1, self.threshold_tokens // 4)
        if cap is not None:
            spent, floor = 0, len(raw)
            while floor > start and (floor == len(raw) or spent + self._cost(raw[floor - 1 : floor]) <= cap):
                spent += self._cost(raw[floor - 1 : floor])
                floor -= 1
            start = floor
        start = parts.safe_cut_at_or_before(raw, start)
        if start == 0 and not extend_to_user:
            start = parts.safe_cut_at_or_after(raw, 1) if len(raw) > 1 else 0
        return start

    def _passes(
        self, backlog: list[dict[str, Any]], tops: list[str], force: bool, focus: str | None
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """Leaf passes over the backlog, then condensation: (uncondensed node ids, backlog left raw)."""
        tops = list(tops)
        previous = self.store.nodes[tops[-1]].text if tops else None
        remaining = backlog
        while remaining:
            size = self._cost(remaining)
            if self.leaf_mode == "whole":
                if size < self.leaf_chunk_tokens and not force:
                    break
                chunk = remaining
            else:
                if size < self.leaf_chunk_tokens and not force:
                    break
                chunk = self._chunk(remaining)
            node = self._leaf(chunk, previous, focus)
            tops.append(node.id)
            previous = node.text
            remaining = remaining[len(chunk) :]
        # Too little backlog to justify a leaf stays raw, before the fresh tail.
        return self._condense(tops), remaining

    def _chunk(self, backlog: list[dict[str, Any]]) -> list[dict[str, Any]]:
        starts = parts.group_starts(backlog)
        end = len(backlog)
        spent = 0
        for i, start in enumerate(starts):
            stop = starts[i + 1] if i + 1 < len(starts) else len(backlog)
            cost = self._cost(backlog[start:stop])
            if i > 0 and spent + cost > self.leaf_chunk_tokens:
                end = start
                break
            spent += cost
        return backlog[:end]

    def _summarize(self, span: list[dict[str, Any]], budget: int, focus: str | None, auto: str | None) -> str:
        return self._summarizer.summarize(
            SummaryRequest(
                turns=span,
                budget_tokens=budget,
                template=ENGINES_TEMPLATE,
                focus_topic=focus,
                auto_focus=auto,
            )
        )

    def _escalate(
        self, span: list[dict[str, Any]], budget: int, focus: str | None, auto: str | None
    ) -> tuple[str, str]:
        """L1 normal, L2 at half budget, L3 head/tail truncation: the first shorter than its input."""
        source_tokens = self._cost(span)
        for level, size in (("L1", budget), ("L2", max(1, budget // 2))):
            text = self._summarize(span, size, focus, auto)
            if self._tokens.text(text) < source_tokens:
                return text, level
        joined = "\n".join(parts.content_text(m) for m in span)
        chars = L3_TOKENS * 4
        head, tail = joined[: int(chars * 0.4)], joined[-int(chars * 0.4) :]
        return f"{head}\n[... {len(joined) - len(head) - len(tail):,} chars truncated ...]\n{tail}", "L3"

    def _budget(self, target: int) -> int:
        """A summary budget scaled to small windows: at most an eighth of the threshold (L3 floor),
        so a few summaries never fill the context they were meant to free."""
        if self.threshold_tokens <= 0:
            return target
        return min(target, max(L3_TOKENS, self.threshold_tokens // 8))

    def _leaf(self, chunk: list[dict[str, Any]], previous: str | None, focus: str | None) -> Node:
        rows = [r for r in (self.store.row_for(m) for m in chunk) if r is not None]
        auto = previous.splitlines()[-1][:400] if previous else None
        text, level = self._escalate(chunk, self._budget(self.leaf_target_tokens), focus, auto)
        turns = (min((r.turn for r in rows), default=0), max((r.turn for r in rows), default=0))
        node = Node(
            node_id(f"leaf:{','.join(r.store_id for r in rows)}:{text}"),
            0,
            text,
            [r.store_id for r in rows],
            [],
            turns,
            self._tokens.text(text),
            _hint(text),
            level,
        )
        return self.store.add_node(node)

    def _condense(self, tops: list[str]) -> list[str]:
        while True:
            merged = False
            for depth in range(self.max_depth):
                group = [t for t in tops if self.store.nodes[t].depth == depth]
                if len(group) < self.condensation_fanin:
                    continue
                chosen = group[: self.condensation_fanin]
                children = [self.store.nodes[c] for c in chosen]
                span = [{"role": "user", "content": c.text} for c in children]
                text, level = self._escalate(span, self._budget(self.condensed_target_tokens), None, None)
                turns = (children[0].turn_range[0], children[-1].turn_range[1])
                node = Node(
                    node_id(f"node:{','.join(chosen)}:{text}"),
                    depth + 1,
                    text,
                    [],
                    list(chosen),
                    turns,
                    self._tokens.text(text),
                    _hint(text),
                    level,
                )
                self.store.add_node(node)
                at = tops.index(chosen[0])
                tops = [t for t in tops if t not in chosen]
                tops.insert(at, node.id)
                merged = True
                break
            if not merged:
                return tops

    def _ordered(self, tops: list[str]) -> list[str]:
        """Uncondensed nodes in assembly order: deepest first, then as they came."""
        return sorted(tops, key=lambda t: (-self.store.nodes[t].depth, tops.index(t)))

    def _node_rows(self, ordered: list[str]) -> list[dict[str, Any]]:
        return [self._node_message(self.store.nodes[t], first=i == 0) for i, t in enumerate(ordered)]

    def _assemble(
        self, ordered: list[str], leftover: list[dict[str, Any]], tail: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        return [*self._node_rows(ordered), *leftover, *tail]

    def _node_message(self, node: Node, *, first: bool) -> dict[str, Any]:
        lo, hi = node.turn_range
        text = (
            f"{SUMMARY_HEADER} {node.id} | depth {node.depth} | turns {lo}-{hi}]\n"
            + (f"{USAGE_NOTE}\n\n" if first else "")
            + f"{node.text}\nExpand for details about: {node.expand_hint}"
        )
        return {
            "role": "user",
            # One text part, not a string: the host merges adjacent user rows of string content in
            # its own history before each request (docs/host-loop.md, History repair), which would
            # fold the node rows into one and lose every node flag but the first.
            "content": [{"type": "text", "text": text}],
            NODE_FLAG: node.id,
            "message_uid": parts.engine_uid("lcm", f"{node.id}:{int(first)}"),
        }

    def _stub(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("role") != "tool":
            return message
        text = parts.content_text(message)
        if len(text) <= self.large_output_chars:
            return message
        row = self.store.row_for(message)
        ref = row.store_id if row is not None else "?"
        return parts.with_content(
            message,
            f"[large tool output stored as {ref}: {len(text):,} chars, "
            f'{parts.line_count(text):,} lines; lcm_expand("{ref}") reads it]',
        )


def _hint(text: str) -> str:
    """The first words of each section's first item: what expanding the node would give."""
    items: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("- ", "1. ")) and len(items) < 6:
            items.append(line.lstrip("-1. ")[:60])
    return "; ".join(items) if items else text[:120].replace("\n", " ")


def register(ctx: Any) -> None:
    """General-plugin registration (the host's ``register(ctx)`` path)."""
    ctx.register_context_engine(LcmEngine())
