"""When the host runs the built-in compressor's micro-compaction pass (``docs/compressor.md``).

Upstream's turn finalizer calls it once per turn, before persisting and before ``on_turn_complete``,
only for a turn that completed with a reply (not failed, not interrupted, a final response) and only
when the engine is the built-in compressor with the pass switched on: a plugin engine never gets it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contextlab.engine import Message
from contextlab.host.turns import Turn
from contextlab.messages import content_text

MicroPass = Callable[[list[Message]], Any]


def micro_pass(engine: Any) -> MicroPass | None:
    """The engine's micro-compaction entry point when it is switched on (strictly ``True``), else None.

    contextlab's port exposes ``micro_compact`` / ``micro_compact_after_turn``; a real Hermes
    ``ContextCompressor`` new enough to have the pass exposes ``_micro_compact_enabled`` /
    ``_micro_compact`` (the names upstream's finalizer checks).
    """
    for flag, method in (("micro_compact", "micro_compact_after_turn"), ("_micro_compact_enabled", "_micro_compact")):
        run = getattr(engine, method, None)
        if getattr(engine, flag, False) is True and callable(run):
            return run  # type: ignore[no-any-return]
    return None


def completed_with_reply(turn: Turn, messages: Sequence[Message]) -> bool:
    """The turn ended on an assistant reply with text: upstream's ``final_response`` is set.

    A turn whose last request was answered with tool calls only ends on a pending tool result, which
    upstream's finalizer turns into a failed turn; a turn with no request has no reply at all.
    """
    if not turn.steps:
        return False
    last = turn.steps[-1]
    if last.tool_indices:
        return False
    return bool(content_text(messages[last.assistant_index]).strip())
