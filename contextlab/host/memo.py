"""Content-keyed memos for the messages a replay host handles.

Results are keyed by content (:func:`contextlab.messages.freeze`), never by object identity, so no
memo keeps an object alive after the host drops it: a row's per-object results live next to the
row in :class:`contextlab.host.history.WorkingHistory`, and go when the row goes. These memos are
the fallback for rows the history does not hold (engine-built rows, compaction results), and they
grow with the distinct contents of a run, like the tokenizer's own memo.
"""

from __future__ import annotations

from typing import Any

from contextlab.engine import Message
from contextlab.messages import freeze, transport_form, wire_message
from contextlab.tokens import ExactCounter, RoughCounter


class MessageMemo:
    """Wire form (for the replay's route), exact tokens (of wire messages) and rough tokens, memoized by content.

    The wire form is the row as it leaves the transport (:func:`~contextlab.messages.transport_form`);
    the rough estimate is the host's, of the request copy before the transport drops its keys."""

    def __init__(
        self,
        exact: ExactCounter,
        rough: RoughCounter,
        *,
        echo_reasoning: bool = False,
        thought_signatures: bool = False,
    ) -> None:
        self.exact_counter = exact
        self.rough_counter = rough
        self.echo_reasoning = echo_reasoning  # the route's: one per replay, so no memo key needs it
        self.thought_signatures = thought_signatures  # the model's: the same
        self._rows: dict[Any, tuple[Message, int, int]] = {}

    def _forms(self, message: Message) -> tuple[Message, Message]:
        """The request copy the host estimates, and what the transport sends of it."""
        copy = wire_message(message, self.echo_reasoning)
        return copy, transport_form(copy, self.thought_signatures)

    def row(self, message: Message) -> tuple[Message, int, int]:
        """Wire form, exact tokens and rough tokens of a message, with one content hash for all three."""
        key = freeze(message)
        hit = self._rows.get(key)
        if hit is None:
            copy, wire = self._forms(message)
            hit = (wire, self.exact_counter.message(wire), self.rough_counter.message(copy))
            self._rows[key] = hit
        return hit

    def fresh_row(self, message: Message) -> tuple[Message, int, int]:
        """What :meth:`row` gives, without the content-keyed lookups (three content hashes per row):
        for a row whose results are kept next to it (a newly appended history row). Its texts still
        hit the tokenizer's text memo."""
        copy, wire = self._forms(message)
        return wire, self.exact_counter.count_message(wire), self.rough_counter.estimate(copy)

    def fresh_wire(self, message: Message) -> tuple[Message, int]:
        """Wire form and rough tokens of a message, without the content-keyed lookups."""
        copy, wire = self._forms(message)
        return wire, self.rough_counter.estimate(copy)

    def stale_thinking(self, message: Message) -> int:
        """Rough tokens an assistant row's reasoning adds to the host's estimate of the *persisted*
        row when the route never sends it (0 on an echo route, whose wire form carries it already).

        The host estimates persisted rows for its usage-anchored delta and its fallbacks, and the
        request copy before a call; on a strict route only the former see the reasoning."""
        if self.echo_reasoning or message.get("role") != "assistant":
            return 0
        if not (message.get("reasoning") or message.get("reasoning_content")):
            return 0
        bare = {k: v for k, v in message.items() if k not in ("reasoning", "reasoning_content")}
        return max(0, self.rough_counter.estimate(message) - self.rough_counter.estimate(bare))

    def wire(self, message: Message) -> Message:
        """The wire form of a message (one stable object per distinct content)."""
        return self.row(message)[0]

    def exact(self, wire: Message) -> int:
        """Exact tokens of a wire message."""
        return self.exact_counter.message(wire)

    def rough(self, message: Message) -> int:
        """The host's rough estimate of a message."""
        return self.rough_counter.message(message)
