"""The summary handoff shared by the ``summary`` and ``hybrid`` plugins (``engines.md`` §5 E3).

Output layout: ``[head…] + [one user message "[CONTEXT SUMMARY] …" + end marker] + [tail…]``, cut at
safe indices; the system prompt is never edited. In ``anchored`` mode the previous summary's sections
are kept as keyed sets and only the new span is merged in (Factory); in ``regenerate`` mode the
previous summary is re-read as text with each carried line cut to 120 characters, so loss compounds
across compactions (Claude Code / Codex / OpenHands). When the newest real user message falls inside
the summarized span it is restated on the summary carrier, which records its uid in
``_absorbed_message_uids`` (the host's merge rule: the summary text comes first, so the carrier keeps
its own engine-authored uid).

This is composition, not a ContextEngine subclass: a plugin must subclass the host's own
``agent.context_engine.ContextEngine``, so shared behaviour lives in plain objects it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextlab.engine import Message
from contextlab.engines import parts
from contextlab.engines.summarizers import (
    ENGINES_TEMPLATE,
    ExtractiveSummarizer,
    Summarizer,
    SummaryFailure,
    SummaryRequest,
)

SUMMARY_PREFIX = "[CONTEXT SUMMARY]"
SUMMARY_LEAD = "Earlier turns were compacted into this summary. It is reference material, not a new request."
SUMMARY_END = "[END OF CONTEXT SUMMARY]"
RESTATED = "[Current request, restated from the compacted turns]"
CARRIER_FLAG = "_contextlab_summary"
"""Underscore key marking the carrier row (the host strips ``_`` keys from the wire, keeps them persisted)."""

MIN_SUMMARY_TOKENS = 2_000
MAX_SUMMARY_TOKENS = 10_000
SUMMARY_RATIO = 0.20
MODES = ("anchored", "regenerate")


def summary_budget(span_tokens: int) -> int:
    """``clamp(0.20 x span, 2,000, 10,000)`` (Hermes ``_SUMMARY_RATIO`` and its floor and ceiling)."""
    return max(MIN_SUMMARY_TOKENS, min(MAX_SUMMARY_TOKENS, int(SUMMARY_RATIO * span_tokens)))


def is_carrier(message: Message) -> bool:
    """A summary carrier written by :class:`Handoff` (flag, or the fixed prefix on a user row)."""
    if message.get(CARRIER_FLAG):
        return True
    return message.get("role") == "user" and parts.content_text(message).startswith(SUMMARY_PREFIX)


def split_carrier(text: str) -> tuple[str, str | None]:
    """``(summary body, restated request or None)`` from a carrier's text."""
    body = text
    if body.startswith(SUMMARY_PREFIX):
        body = body[len(SUMMARY_PREFIX) :]
    body = body.lstrip()
    if body.startswith(SUMMARY_LEAD):
        body = body[len(SUMMARY_LEAD) :]
    restated: str | None = None
    if RESTATED in body:
        body, _, restated = body.partition(RESTATED)
        restated = restated.strip() or None
    body = body.replace(SUMMARY_END, "").strip()
    return body, restated


def newest_real_user(messages: Sequence[Message]) -> int | None:
    """Index of the newest user message that is not a summary carrier."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and not is_carrier(messages[i]):
            return i
    return None


@dataclass
class Handoff:
    """One configured summary handoff.

    Attributes:
        mode: ``anchored`` or ``regenerate``.
        keep_first: Non-system messages always kept at the head (extended to the first user
            message and to a safe cut).
        tail_messages: Newest messages kept verbatim (None: use ``tail_tokens``).
        tail_tokens: Newest rough tokens kept verbatim instead of a message count.
        tail_turns: Newest user turns kept verbatim instead (JetBrains hybrid: 10).
        keep_user_tokens: Codex: also keep the newest user messages of the span verbatim, up to
            this many tokens (0: off).
        summarizer: Produces the summary body.
        span_filter: Applied to the span before summarizing (``hybrid`` drops masked outputs).
        max_tail_tokens: Whatever the mode, the tail never holds more rough tokens than this (its
            newest message always stays): in a single-turn tool loop a message- or turn-count tail
            can cover the whole history, and the pass would then be a no-op (None: no bound).
    """

    mode: str = "anchored"
    keep_first: int = 0
    tail_messages: int | None = 20
    tail_tokens: int | None = None
    tail_turns: int | None = None
    keep_user_tokens: int = 0
    summarizer: Summarizer | None = None
    span_filter: Callable[[list[Message]], list[Message]] | None = None
    max_tail_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"summary_mode must be one of {MODES}, got {self.mode!r}")
        if self.summarizer is None:
            self.summarizer = ExtractiveSummarizer()
        self._tokens = parts.TokenEstimator()

    # ------------------------------------------------------------------ cut points

    def head_end(self, messages: Sequence[Message]) -> int:
        end = parts.head_end(messages)
        if self.keep_first:
            end = max(end, parts.safe_cut_at_or_after(messages, self.keep_first))
        return min(end, len(messages))

    def tail_start(self, messages: Sequence[Message], floor: int) -> int:
        n = len(messages)
        if self.tail_turns is not None:
            users = [i for i, m in enumerate(messages) if m.get("role") == "user" and not is_carrier(m)]
            start = users[-self.tail_turns] if 0 < self.tail_turns <= len(users) else (floor if self.tail_turns else n)
        elif self.tail_tokens is not None:
            spent, start = 0, n
            while start > floor:
                cost = self._tokens.message(messages[start - 1])
                if spent + cost > self.tail_tokens:
                    break
                spent += cost
                start -= 1
        else:
            start = n - max(0, self.tail_messages or 0)
        if self.max_tail_tokens is not None:
            start = max(start, self._token_bound(messages, floor))
        return max(floor, parts.safe_cut_at_or_before(messages, max(floor, start)))

    def _token_bound(self, messages: Sequence[Message], floor: int) -> int:
        """The earliest tail start within ``max_tail_tokens`` (the newest message always fits)."""
        assert self.max_tail_tokens is not None
        start, spent = len(messages), 0
        while start > floor:
            cost = self._tokens.message(messages[start - 1])
            if start < len(messages) and spent + cost > self.max_tail_tokens:
                break
            spent += cost
            start -= 1
        return start

    # ------------------------------------------------------------------ the pass

    def compress(
        self,
        messages: list[Message],
        *,
        focus_topic: str | None = None,
        force: bool = False,
        span_filter: Callable[[list[Message]], list[Message]] | None = None,
    ) -> list[Message]:
        """The handed-off history; the input object when nothing can be summarized or it would not shrink."""
        head = self.head_end(messages)
        tail = self.tail_start(messages, head)
        span = messages[head:tail]
        carriers = [m for m in span if is_carrier(m)]
        fresh = [m for m in span if not is_carrier(m)]
        if not fresh and not (force and carriers):
            return messages
        previous, restated, absorbed = self._previous(carriers)
        kept_users = self._kept_users(fresh)
        to_summarize = [m for m in fresh if not any(m is k for k in kept_users)]
        span_filter = span_filter or self.span_filter
        if span_filter is not None:
            to_summarize = span_filter(to_summarize)
        budget = summary_budget(self._tokens.messages(span))
        assert self.summarizer is not None
        body = self.summarizer.summarize(
            SummaryRequest(
                turns=to_summarize,
                budget_tokens=budget,
                template=ENGINES_TEMPLATE,
                previous_summary=previous,
                focus_topic=focus_topic,
                first_index=head,
                merge_mode=self.mode,
            )
        )
        # The in-flight task must survive: restate the newest real user message if it is summarized.
        newest = newest_real_user(messages)
        if newest is not None and head <= newest < tail and not any(messages[newest] is k for k in kept_users):
            restated = parts.content_text(messages[newest])
            uid = messages[newest].get("message_uid")
            absorbed = [uid] if isinstance(uid, str) and uid else []
        elif carriers and newest is not None and newest > _index_of(messages, carriers[-1]):
            # A newer real request exists: the old restatement is history now (the summary has it).
            restated, absorbed = None, []
        carrier = self._carrier(body, restated, absorbed)
        result = [*messages[:head], *kept_users, carrier, *messages[tail:]]
        if self._tokens.messages(result) >= self._tokens.messages(messages):
            return messages
        return result

    def _previous(self, carriers: list[Message]) -> tuple[str | None, str | None, list[str]]:
        if not carriers:
            return None, None, []
        latest = carriers[-1]
        body, restated = split_carrier(parts.content_text(latest))
        absorbed = [u for u in latest.get("_absorbed_message_uids") or [] if isinstance(u, str)]
        return body or None, restated, absorbed

    def _kept_users(self, fresh: list[Message]) -> list[Message]:
        if not self.keep_user_tokens:
            return []
        kept: list[Message] = []
        spent = 0
        for message in reversed(fresh):
            if message.get("role") != "user":
                continue
            cost = self._tokens.message(message)
            if spent + cost > self.keep_user_tokens:
                break
            kept.append(message)
            spent += cost
        return list(reversed(kept))

    def _carrier(self, body: str, restated: str | None, absorbed: list[str]) -> Message:
        text = f"{SUMMARY_PREFIX} {SUMMARY_LEAD}\n\n{body.strip()}\n\n{SUMMARY_END}"
        if restated:
            text += f"\n\n{RESTATED}\n{restated}"
        # One text part, not a string: the host merges two adjacent user rows of string content in its
        # own history before each request (docs/host-loop.md, History repair), which would fold the
        # carrier into the first user ask before it (or the next ask into the carrier) and lose it.
        carrier: Message = {"role": "user", "content": [{"type": "text", "text": text}], CARRIER_FLAG: True}
        # Engine-authored rows may pre-stamp their uid; the host writes it through.
        carrier["message_uid"] = parts.engine_uid("summary", text)
        if absorbed:
            carrier["_absorbed_message_uids"] = list(absorbed)
        return carrier


class AcceptingSummarizer:
    """The LCM acceptance rule around a (usually LLM) summarizer.

    Accepts the first of {primary at the budget, primary at half the budget, the extractive
    summarizer, a deterministic head/tail truncation} that is non-empty and shorter than its input;
    a :class:`SummaryFailure` moves on to the next candidate.
    """

    name = "accepting"

    def __init__(self, primary: Summarizer) -> None:
        self.primary = primary
        self.fallback = ExtractiveSummarizer()
        self._tokens = parts.TokenEstimator()
        self.accepted: list[str] = []  # which candidate won, per call (for inspection)

    def summarize(self, request: SummaryRequest) -> str:
        source = self._tokens.messages(request.turns)
        if request.previous_summary:
            source += self._tokens.text(request.previous_summary)
        candidates = (
            ("primary", self.primary, request.budget_tokens),
            ("primary_half", self.primary, max(1, request.budget_tokens // 2)),
            ("extractive", self.fallback, request.budget_tokens),
        )
        for label, summarizer, budget in candidates:
            try:
                text = summarizer.summarize(replace(request, budget_tokens=budget))
            except SummaryFailure:
                continue
            if text.strip() and self._tokens.text(text) < source:
                self.accepted.append(label)
                return text
        self.accepted.append("truncation")
        joined = "\n".join(parts.content_text(m) for m in request.turns)
        keep = max(200, request.budget_tokens * 4 * 2 // 5)  # 40% head + 40% tail of the budget, in chars
        if len(joined) <= 2 * keep:
            return joined
        return f"{joined[:keep]}\n[... {len(joined) - 2 * keep:,} chars truncated ...]\n{joined[-keep:]}"


def extractive_or(summarizer: Any) -> Summarizer:
    """Resolve a ``summarizer`` parameter.

    ``"extractive"`` (default): the offline extractive summarizer. ``"llm"``: issue-3's
    :class:`~contextlab.engines.summarizers.llm.LLMSummarizer` configured from the environment
    (record/replay cache), behind :class:`AcceptingSummarizer`. An object with
    ``summarize(SummaryRequest)`` is used as is.
    """
    if summarizer in (None, "extractive"):
        return ExtractiveSummarizer()
    if summarizer == "llm":
        from contextlab.engines.summarizers.llm import LLMSummarizer

        return AcceptingSummarizer(LLMSummarizer())
    if isinstance(summarizer, str):
        raise ValueError(f"unknown summarizer {summarizer!r}; use 'extractive', 'llm' or a Summarizer object")
    if not callable(getattr(summarizer, "summarize", None)):
        raise ValueError("summarizer must be 'extractive', 'llm' or an object with summarize(SummaryRequest)")
    return summarizer  # type: ignore[no-any-return]


def _index_of(messages: Sequence[Message], target: Message) -> int:
    for i, message in enumerate(messages):
        if message is target:
            return i
    return -1
