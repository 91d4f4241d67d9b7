"""Request observers: how measurement models (prompt cache, retention probes) add trace columns.

The host computes one :class:`RequestView` per request and hands it to each observer; an observer
returns extra columns for that request's trace row and a few summary values at the end. Observers
see only this view, never the engine, so they cannot change what the host does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from contextlab.engine import Message


@dataclass(frozen=True)
class RequestView:
    """Everything an observer may know about one provider request.

    Attributes:
        turn: Turn index.
        request: Request index in the run (0-based).
        timestamp: Virtual clock time of the request (seconds).
        messages: Final wire messages, system prompt first: a read-only sequence (index it, slice it,
            iterate it; ``list(view.messages)`` for a list). The host makes it in O(1) as a view of
            its own append-only lists (``docs/performance.md``, "Requests as views"), so reading
            ``view.messages[view.prefix_messages:]`` costs only the new messages.
        tools: Tool schemas sent with the request.
        message_tokens: Exact tokens of each message in ``messages`` (a read-only sequence too).
        tools_tokens: Exact tokens of ``tools``.
        fixed_overhead_tokens: Unseen prompt tokens added by the host settings.
        prompt_tokens: Exact prompt tokens of the whole request.
        history: The engine-managed working history at this request (with uids; do not mutate).
        transcript_index: Index in the transcript of the recorded assistant message this request
            precedes: every transcript row before it has been seen by the host.
        prefix_messages: How many leading messages this request shares with the previous one (the
            same objects), so an observer can update its state incrementally.
        completion_tokens: Output tokens of the (recorded) response, for pricing.
        history_version: How many times the host has replaced the working history so far (each
            committed compaction, prune or micro pass, and each session reset): when it differs
            from the previous request's, the history was rewritten in between, whatever rows the
            rewrite kept. The host's own repair of its history before a request (merged or
            dropped rows, ``docs/host-loop.md`` §History repair) is not counted: its rows show
            as changed messages after the shared prefix.
    """

    turn: int
    request: int
    timestamp: float
    messages: Sequence[Message]
    tools: list[dict[str, Any]]
    message_tokens: Sequence[int]
    tools_tokens: int
    fixed_overhead_tokens: int
    prompt_tokens: int
    history: Sequence[Message]
    transcript_index: int = -1
    prefix_messages: int = 0
    completion_tokens: int = 0
    history_version: int = 0


@runtime_checkable
class RequestObserver(Protocol):
    """Adds columns to the trace. One instance per replay (``clone`` gives a fresh one).

    An observer may also define ``bind(transcript)``; the host calls it once before the first
    request (retention probes read the transcript's gold facts there), ``bind_engine(engine)`` just
    before it (only the recovery oracle uses it, to call the engine's own recall tools), and
    ``finish(result)`` once after the run (to add frames, post-run columns and summary values), and
    ``rows_made(rows)`` whenever the host appends rows whose content is not the recorded one
    (``{transcript index: row}``: a tool output spilled to a preview or wrapped, a reply's content
    flattened, stripped or redacted; ``docs/host-loop.md`` §Tool results, §Assistant rows).
    """

    def columns(self) -> list[str]:
        """Names of the columns :meth:`observe` returns, in order."""
        ...

    def observe(self, view: RequestView) -> dict[str, Any]:
        """Columns for this request. Keys ``cache_read_tokens`` / ``cache_write_tokens`` also feed
        the simulated usage dict passed to ``update_from_response``."""
        ...

    def summary(self) -> dict[str, Any]:
        """Values for the one-row run summary."""
        ...

    def clone(self) -> RequestObserver:
        """A fresh observer with the same configuration and no state."""
        ...
