"""The small interface every summarizer implements, its request type and its failure classes.

A summarizer turns a span of messages (plus an optional previous summary and focus topic) into a
Markdown summary laid out by a :class:`~contextlab.engines.summarizers.template.SummaryTemplate`.
Failures are raised as :class:`SummaryFailure` with a :class:`FailureKind`, which the engines map
onto the host's failure handling (abort, cooldown, deterministic fallback).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from contextlab.engine import Message
from contextlab.engines.summarizers.template import SummaryTemplate


class FailureKind(enum.Enum):
    """Why a summary could not be produced, in the host's classes (``host-contract.md`` §2d step 6)."""

    AUTH = "auth"  # 401/403: abort, input unchanged
    QUOTA = "quota"  # 402, insufficient_quota: abort
    NETWORK = "network"  # connection refused/reset before a response: abort
    STREAM = "stream"  # the response stream closed early: abort, 30 s cooldown
    TIMEOUT = "timeout"  # 408/429/502/504 or a client timeout: 60 -> 300 -> 900 s ladder
    JSON = "json"  # an undecodable response body: 30 s cooldown
    MODEL_NOT_FOUND = "model_not_found"  # 404/503: 60 s cooldown
    EMPTY = "empty"  # an empty summary counts as a failure: 60 s cooldown
    NO_PROVIDER = "no_provider"  # nothing configured (or a replay-only cache miss): 600 s cooldown
    OTHER = "other"  # anything else: 60 s cooldown

    @property
    def aborts(self) -> bool:
        """Auth, quota and network failures make the host return the input unchanged."""
        return self in (FailureKind.AUTH, FailureKind.QUOTA, FailureKind.NETWORK, FailureKind.STREAM)


class SummaryFailure(Exception):
    """A summarizer could not produce a summary; ``kind`` says which host failure class applies."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        self.kind = kind
        self.detail = detail
        super().__init__(f"{kind.value}: {detail}")


@dataclass(frozen=True)
class SummaryRequest:
    """Everything a summarizer may use.

    Attributes:
        turns: The span to summarize (the compressor's middle, already tool-pruned).
        budget_tokens: Target size of the summary body in rough tokens (chars / 4).
        template: Section headings and their extraction rules.
        previous_summary: The body of an earlier summary to update iteratively, or None.
        focus_topic: An explicit focus (manual ``/compress <focus>``): it gets most of the budget.
        auto_focus: Recent user turns the host adds when no focus is given (ranking only).
        memory_context: Memory-provider text from ``on_pre_compress`` (LLM prompt only).
        first_index: Index of ``turns[0]`` in the full history (for ``[t<idx>]`` timeline labels).
        merge_mode: ``"anchored"`` (keyed sections, new items appended) or ``"regenerate"``
            (the previous summary is re-rendered as text with each carried line cut short).
        prompt: The exact prompt the host would send its summary model (set by the ``compressor``;
            empty when an engine does not model the host's prompt).
    """

    turns: list[Message]
    budget_tokens: int
    template: SummaryTemplate
    previous_summary: str | None = None
    focus_topic: str | None = None
    auto_focus: str | None = None
    memory_context: str = ""
    first_index: int = 0
    merge_mode: str = "anchored"
    prompt: str = ""


@runtime_checkable
class Summarizer(Protocol):
    """Produces a summary body (no prefix, no end marker) or raises :class:`SummaryFailure`."""

    name: str

    def summarize(self, request: SummaryRequest) -> str: ...


class FunctionSummarizer:
    """A summarizer from a plain function of ``(prompt, request)``: a fake, or recorded answers keyed by
    the host's prompt, dropped in where an LLM would be."""

    def __init__(self, function: Callable[[str, SummaryRequest], str], name: str = "function") -> None:
        self._function = function
        self.name = name

    def summarize(self, request: SummaryRequest) -> str:
        return self._function(request.prompt, request)
