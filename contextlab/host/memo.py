"""Identity-keyed memo for the messages a replay host owns.

The host never mutates a history message after it is created (stamping adds persistence-only
fields, which neither the wire form nor either estimate reads), so per-object results stay valid
for the whole replay. Looking them up by ``id`` makes a request over an n-message history cost n
dict lookups instead of n content hashes. Objects are pinned so an ``id`` is never reused. Messages
the host does not own (what ``select_context`` returns) go through the content-keyed memos instead.
"""

from __future__ import annotations

from contextlab.engine import Message
from contextlab.messages import WireCache
from contextlab.tokens import ExactCounter, RoughCounter


class MessageMemo:
    """Wire form, exact tokens (of wire objects) and rough tokens, keyed by object identity."""

    def __init__(self, exact: ExactCounter, rough: RoughCounter) -> None:
        self.exact_counter = exact
        self.rough_counter = rough
        self.wire_cache = WireCache()
        self._wire: dict[int, tuple[Message, Message]] = {}
        self._exact: dict[int, tuple[Message, int]] = {}
        self._rough: dict[int, tuple[Message, int]] = {}

    def wire(self, message: Message) -> Message:
        """The wire form of a host-owned message (one stable object per distinct content)."""
        hit = self._wire.get(id(message))
        if hit is not None:
            return hit[1]
        wire = self.wire_cache.wire(message)
        self._wire[id(message)] = (message, wire)
        return wire

    def exact(self, wire: Message) -> int:
        """Exact tokens of a wire message this host created (memo by identity, then by content)."""
        hit = self._exact.get(id(wire))
        if hit is not None:
            return hit[1]
        tokens = self.exact_counter.message(wire)
        self._exact[id(wire)] = (wire, tokens)
        return tokens

    def rough(self, message: Message) -> int:
        """The host's rough estimate of a host-owned message."""
        hit = self._rough.get(id(message))
        if hit is not None:
            return hit[1]
        tokens = self.rough_counter.message(message)
        self._rough[id(message)] = (message, tokens)
        return tokens
