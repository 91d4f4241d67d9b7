"""Micro-compaction: the host's opt-in per-turn rolling compaction (``compression.micro_compact``).

After a completed turn, one pass folds the oldest exchange not yet absorbed (an assistant turn with
its tool results, up to the next user message) into a single rolling summary marker. User messages
are never absorbed. The marker is an assistant row carrying the summary metadata keys, so a later
batch compaction or a reload treats it like any handoff. Off by default: every pass rewrites history
that was already sent, so it breaks the prompt-cache prefix once per pass. The rules and the
upstream source they follow are in ``docs/compressor.md`` (section "Micro-compaction").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, NamedTuple, Protocol

import yaml

from contextlab.engine import Message
from contextlab.engines.compressor import assembly, boundaries
from contextlab.engines.summarizers.base import Summarizer, SummaryFailure, SummaryRequest
from contextlab.engines.summarizers.prompt import HISTORICAL_TASK_HEADING, serialize
from contextlab.engines.summarizers.template import SectionSpec, SummaryTemplate
from contextlab.errors import ConfigError
from contextlab.messages import content_text
from contextlab.redact import redact
from contextlab.tokens import RoughCounter, estimate_tokens_rough

MICRO_KEY = "_micro_compact_marker"
"""Metadata key of a marker whose text the rolling summary provably holds (only these are superseded)."""
MAX_CONSECUTIVE_FAILURES = 3
"""Failed summaries of the same exchange before it is skipped (it stays for batch compaction)."""
DEFAULT_DEFRAG_THRESHOLD_TOKENS = 2_000
MIN_MESSAGES = 4
SUMMARY_MAX_TOKENS = 1_500
"""The aux call's ``max_tokens``: ``min(1500, max_summary_tokens or 1500)``."""
MODEL_ONLY = "model_only"
"""``display_metadata`` flag on a user row the supersede merge built (displayed from its sources)."""
DATA_FILE = "hermes_micro_texts.yaml"

MICRO_TEMPLATE = SummaryTemplate(
    name="micro",
    sections=(
        # No task snapshot or user asks: an exchange never holds a user message.
        SectionSpec("Completed Actions", "actions", item_chars=200, trim_rank=20, numbered=True),
        SectionSpec("Active State", "current_state", item_chars=600, trim_rank=None, single="last"),
        SectionSpec("Blocked", "errors", item_chars=160, trim_rank=40, max_items=30),
        SectionSpec("Key Decisions", "decisions", item_chars=200, trim_rank=30, max_items=40),
        SectionSpec("Relevant Files", "files", item_chars=200, trim_rank=45, max_items=60),
        SectionSpec("Historical Remaining Work", "remaining", item_chars=200, trim_rank=35, max_items=20),
        SectionSpec("Critical Context", "identifiers", item_chars=120, trim_rank=15, max_items=80),
        SectionSpec("Session Log", "timeline", item_chars=220, trim_rank=10),
    ),
    fallback_source="timeline",
)
"""Sections of the offline summarizer's rolling summary (the host's headings minus the user-side ones)."""


@cache
def _texts() -> dict[str, str]:
    raw = resources.files("contextlab").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    data = yaml.safe_load(raw)
    entries = data.get("texts") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(f"contextlab/data/{DATA_FILE}: expected a mapping with a 'texts' section")
    out: dict[str, str] = {}
    for key in ("micro_prompt", "micro_system", "micro_no_summary"):
        entry = entries.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            raise ConfigError(f"contextlab/data/{DATA_FILE}: texts.{key}.text is missing")
        out[key] = entry["text"]
    return out


def micro_prompt(rolling_summary: str, exchange_text: str) -> str:
    """The user message the host sends its summary model for one micro pass (or a defrag)."""
    texts = _texts()
    block = rolling_summary if rolling_summary.strip() else texts["micro_no_summary"]
    return texts["micro_prompt"].format(summary_block=block, exchange_text=exchange_text)


def render_marker(summary: str) -> str:
    """The marker's content: summary prefix, the task heading, the rolling summary, the end marker."""
    return f"{assembly.SUMMARY_PREFIX}\n\n{HISTORICAL_TASK_HEADING}\n{summary.strip()}\n\n{assembly.END_MARKER}"


def rolling_summary_from_marker(content: Any) -> str:
    """The rolling summary a marker carries: after the last task heading (the prefix mentions it too),
    up to the end marker (resume rehydration)."""
    if not isinstance(content, str) or not content.strip():
        return ""
    at = content.rfind(HISTORICAL_TASK_HEADING)
    body = content[at + len(HISTORICAL_TASK_HEADING) :] if at != -1 else content
    end = body.find(assembly.END_MARKER)
    return (body[:end] if end != -1 else body).strip()


class MicroHost(Protocol):
    """What a pass needs from the compressor it runs in."""

    protect_last_n: int
    min_tail_user_messages: int
    tail_token_budget: int
    context_length: int
    max_summary_tokens: int
    summarizer: Summarizer

    def head_size(self, messages: list[Message]) -> int: ...


class Exchange(NamedTuple):
    """``messages[start:end]``: one assistant turn and its tool rows."""

    start: int
    end: int


@dataclass
class MicroOutcome:
    """What the last pass did (``absorbed``, ``summarize_failed``, ``exchange_skipped``, ``defrag``,
    ``defrag_failed``; ``""`` when no pass was due or nothing was found)."""

    outcome: str = ""
    tokens_before: int = 0
    tokens_after: int = 0


class MicroCompactor:
    """The rolling-summary state of one session and the pass that advances it.

    Args:
        every_n_turns: Run a pass every Nth completed turn (clamped to at least 1).
        defrag_threshold_tokens: Rewrite the rolling summary once it reaches this many rough tokens.
    """

    def __init__(self, every_n_turns: int = 1, defrag_threshold_tokens: int = DEFAULT_DEFRAG_THRESHOLD_TOKENS) -> None:
        self.every_n_turns = max(1, int(every_n_turns or 1))
        self.defrag_threshold_tokens = max(1, int(defrag_threshold_tokens))
        self._rough = RoughCounter()
        self.turns_since_pass = 0
        self.passes = 0
        self.tokens_saved_total = 0
        self.last = MicroOutcome()
        self.after_compaction()

    def after_compaction(self) -> None:
        """A batch compaction's marker covers more than the rolling summary: start over."""
        self.cursor = 0
        self.rolling_summary = ""
        self.failures = 0
        self.last_failure_cursor = -1
        self._adopted: str | None = None

    def reset(self) -> None:
        """``/new`` or ``/reset``: all per-session state, counters included."""
        self.after_compaction()
        self.turns_since_pass = 0
        self.passes = 0
        self.tokens_saved_total = 0
        self.last = MicroOutcome()

    # ------------------------------------------------------------------ the pass

    def run(self, messages: list[Message], host: MicroHost) -> list[Message]:
        """One pass over ``messages`` (the engine's own copy). Returns ``messages`` itself when nothing
        changed, else a new list: the history with one exchange spliced into the marker, or (defrag)
        with the marker's text rewritten."""
        self.last = MicroOutcome()
        if self.every_n_turns > 1:
            # Counted per call, so a turn that finds nothing to do cannot wedge the cadence.
            self.turns_since_pass += 1
            if self.turns_since_pass < self.every_n_turns:
                return messages
            self.turns_since_pass = 0
        exchange = self.next_exchange(messages, host) if len(messages) >= MIN_MESSAGES else None
        if exchange is None:
            return messages
        before = self._rough.messages(messages)
        budget = min(SUMMARY_MAX_TOKENS, host.max_summary_tokens or SUMMARY_MAX_TOKENS)
        if self.needs_defrag():
            rewrote, result = self._defrag(messages, host.summarizer, budget)
            return self._done("defrag" if rewrote else "defrag_failed", before, result)
        cumulative = bool(self.rolling_summary.strip())
        rows = messages[exchange.start : exchange.end]
        updated = self._summarize(host.summarizer, rows, self.rolling_summary, budget, exchange.start)
        if updated is None:
            return self._done(self._record_failure(exchange), before, messages)
        self.rolling_summary = updated
        self.failures, self.last_failure_cursor = 0, -1
        result = self._splice(messages, exchange, supersede=cumulative)
        # From the spliced list: the splice shifted every later index.
        self.cursor = next(
            (i + 1 for i in range(len(result) - 1, -1, -1) if result[i].get(assembly.SUMMARY_KEY)),
            exchange.start + 1,
        )
        return self._done("absorbed", before, result)

    def _done(self, outcome: str, before: int, result: list[Message]) -> list[Message]:
        after = self._rough.messages(result)
        self.passes += 1
        self.tokens_saved_total += before - after
        self.last = MicroOutcome(outcome, before, after)
        return result

    def needs_defrag(self) -> bool:
        return estimate_tokens_rough(self.rolling_summary) >= self.defrag_threshold_tokens

    # ------------------------------------------------------------------ where

    def next_exchange(self, messages: list[Message], host: MicroHost) -> Exchange | None:
        """The next exchange not yet absorbed, inside the compressible window (the whole active turn
        stays in the tail)."""
        start = boundaries.align_forward(messages, host.head_size(messages))
        end = boundaries.tail_cut_by_tokens(
            messages,
            start,
            host.tail_token_budget,
            protect_last_n=host.protect_last_n,
            min_tail_user_messages=host.min_tail_user_messages,
        )  # upstream 0000416b has no active-turn split: the whole active turn stays in the tail
        if start >= end:
            return None
        cursor = self._resolve_cursor(messages, start, end)
        return None if cursor >= end else find_exchange(messages, cursor, end)

    def _resolve_cursor(self, messages: list[Message], head_end: int, tail_start: int) -> int:
        """The kept cursor when it lies inside the window, else just past the newest handoff there (on a
        reload, the rolling summary is recovered from a standalone one)."""
        if head_end < self.cursor < tail_start:
            return self.cursor
        last = max((i for i in range(head_end, tail_start) if assembly.is_handoff(messages[i])), default=-1)
        cursor = last + 1 if last >= head_end else head_end
        if last >= head_end and not self.rolling_summary.strip() and _standalone(messages[last]):
            recovered = rolling_summary_from_marker(messages[last].get("content"))
            if recovered:
                self.rolling_summary = recovered
                # Recovery proves the summary holds this marker's text: it may now be superseded.
                # A handoff merged into a live row is never adopted: superseding it would drop that row.
                messages[last] = {**messages[last], MICRO_KEY: True}
                self._adopted = content_text(messages[last])
        self.cursor = cursor
        return cursor

    def _is_micro(self, message: Message) -> bool:
        if not message.get(assembly.SUMMARY_KEY):
            return False
        return bool(message.get(MICRO_KEY)) or (self._adopted is not None and content_text(message) == self._adopted)

    # ------------------------------------------------------------------ summaries

    def _summarize(
        self, summarizer: Summarizer, rows: list[Message], previous: str, budget: int, first_index: int
    ) -> str | None:
        """The updated rolling summary, or None when the summarizer failed or returned nothing."""
        exchange_text = serialize(rows) if rows else previous
        request = SummaryRequest(
            turns=rows,
            budget_tokens=budget,
            template=MICRO_TEMPLATE,
            previous_summary=(previous or None) if rows else exchange_text,
            first_index=first_index,
            merge_mode="anchored",
            prompt=micro_prompt(previous if rows else "", exchange_text),
        )
        try:
            body = summarizer.summarize(request)
        except SummaryFailure:
            return None
        text = redact(body or "").strip()
        return text or None

    def _record_failure(self, exchange: Exchange) -> str:
        same = exchange.start == self.last_failure_cursor
        self.failures = self.failures + 1 if same else 1
        self.last_failure_cursor = exchange.start
        if self.failures < MAX_CONSECUTIVE_FAILURES:
            return "summarize_failed"
        # Skip it: the exchange stays in the history for a batch compaction.
        self.cursor = exchange.end
        self.failures, self.last_failure_cursor = 0, -1
        return "exchange_skipped"

    def _defrag(self, messages: list[Message], summarizer: Summarizer, budget: int) -> tuple[bool, list[Message]]:
        """Re-summarize the rolling summary alone and rewrite the newest micro marker in place: no
        splice, no cursor move, no user row touched. ``(rewrote the summary, the history)``."""
        old = self.rolling_summary
        if not old.strip():
            return False, messages
        fresh = self._summarize(summarizer, [], old, budget, 0)
        self.rolling_summary = fresh or old
        if not fresh:
            return False, messages
        self.failures, self.last_failure_cursor = 0, -1
        at = next((i for i in range(len(messages) - 1, -1, -1) if self._is_micro(messages[i])), None)
        if at is None:
            return True, messages
        out = list(messages)
        out[at] = {**messages[at], "content": render_marker(fresh), MICRO_KEY: True}
        return True, out

    # ------------------------------------------------------------------ splice

    def _splice(self, messages: list[Message], exchange: Exchange, *, supersede: bool) -> list[Message]:
        marker: Message = {
            "role": "assistant",  # user -> marker -> user keeps strict alternation
            "content": render_marker(self.rolling_summary),
            assembly.SUMMARY_KEY: True,
            MICRO_KEY: True,
            assembly.HAS_USER_KEY: False,
        }
        result = [*messages[: exchange.start], marker, *messages[exchange.end :]]
        if not supersede:
            return result
        # The summary is cumulative: older micro markers are contained in it. A batch marker is not.
        stale = {i for i, m in enumerate(result) if self._is_micro(m)}
        stale.discard(max(stale, default=-1))
        if not stale:
            return result
        return merge_adjacent_user_turns([m for i, m in enumerate(result) if i not in stale])


def find_exchange(messages: list[Message], start: int, tail_start: int) -> Exchange | None:
    """The first full agent turn at or after ``start``: from a real assistant row over the assistant and
    tool rows that follow, ending at a row of another role before ``tail_start``."""
    limit = min(tail_start, len(messages))

    def turn_row(i: int, roles: tuple[str, ...]) -> bool:
        return messages[i].get("role") in roles and not assembly.is_handoff(messages[i])

    i = start
    while i < limit and not turn_row(i, ("assistant",)):
        i += 1  # user rows and handoffs are never absorbed
    if i >= limit:
        return None
    first = i
    i += 1
    while i < limit and turn_row(i, ("assistant", "tool")):
        i += 1
    # Stopping mid-turn at the tail would put the marker next to assistant/tool rows.
    if i >= len(messages) or messages[i].get("role") in ("assistant", "tool"):
        return None
    return Exchange(first, i)


def merge_adjacent_user_turns(messages: list[Message]) -> list[Message]:
    """Join consecutive plain-text user rows a supersede left adjacent (``\\n\\n``, as the host's
    sequence repair does), so the result alternates and no user text is lost."""

    def plain_user(m: Message | None) -> bool:
        return (
            m is not None
            and m.get("role") == "user"
            and not assembly.is_handoff(m)
            and isinstance(m.get("content"), str)
        )

    merged: list[Message] = []
    for message in messages:
        prev = merged[-1] if merged else None
        if prev is not None and plain_user(prev) and plain_user(message):
            joined = {k: v for k, v in prev.items() if k != "api_content"}  # the sidecar is stale now
            joined["content"] = "\n\n".join(c for c in (prev["content"], message["content"]) if c)
            joined["display_metadata"] = {**(prev.get("display_metadata") or {}), MODEL_ONLY: True}
            merged[-1] = joined
        else:
            merged.append(message)
    return merged


def _standalone(message: Message) -> bool:
    """A handoff row holding only the summary (no genuine content, no tool calls)."""
    if message.get("tool_calls"):
        return False
    return assembly.classify(content_text(message)) == "standalone" and assembly.unwrap_handoff(message).genuine is None
