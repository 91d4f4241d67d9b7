"""Per-turn compaction attempts and their re-arm (docs/host-loop.md §Per-turn attempts).

Upstream (``_should_rearm_compression_budget``; #103355 for plugin engines) re-arms the per-turn budget
when a committed compaction, one that changed the transcript, is followed by a provider prompt count
under the threshold. An unchanged transcript is rejected before the boundary: not committed, no re-arm.
"""

from __future__ import annotations

from typing import Any

from contextlab import HostSettings, replay
from contextlab.engine import Message
from contextlab.transcripts import Transcript
from tests.toy_engines import BaseToy

THRESHOLD = 5_000


def marathon(steps: int = 8, words: int = 6_000) -> Transcript:
    """One user turn and ``steps`` tool rounds whose results each push the request over the threshold."""
    messages: list[Message] = [{"role": "user", "content": "do a lot of tool work"}]
    for i in range(steps):
        call = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call, "type": "function", "function": {"name": "search", "arguments": "{}"}}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call, "content": f"result {i} " + "word " * words})
    messages.append({"role": "assistant", "content": "done"})
    return Transcript("marathon", messages, system_prompt="You are terse.")


class Summarizing(BaseToy):
    """Blanks every oversized payload (a compaction that works); knows nothing of upstream's private
    progress latch, like any plugin engine."""

    def compress(self, messages: list[Message], current_tokens: int | None = None, **_: Any) -> list[Message]:
        self.calls.append(("compress", len(messages)))
        return [{**m, "content": "[summarized]"} if len(str(m.get("content") or "")) > 5_000 else m for m in messages]


class Unchanged(BaseToy):
    """Returns a fresh list with the same rows: a rewrite that changes nothing."""

    def compress(self, messages: list[Message], current_tokens: int | None = None, **_: Any) -> list[Message]:
        self.calls.append(("compress", len(messages)))
        return [dict(m) for m in messages]


class FlagsNoProgress(Summarizing):
    """Rewrites like :class:`Summarizing` but keeps upstream's progress flag and says no progress."""

    def compress(self, messages: list[Message], current_tokens: int | None = None, **kw: Any) -> list[Message]:
        self._last_compression_made_progress = False
        return super().compress(messages, current_tokens, **kw)


def _gated(result: Any) -> Any:
    return result.compactions[result.compactions["trigger"] != "preflight"]


def test_confirmed_headroom_rearms_the_budget_for_a_plugin_engine() -> None:
    result = replay(marathon(), Summarizing(THRESHOLD), HostSettings(context_length=200_000))
    committed = _gated(result)[_gated(result)["outcome"] == "committed"]
    assert len(committed) > 3  # every pressure spike of the single turn is compacted
    assert result.summary["overflows"] == 0


def test_without_confirmed_headroom_the_budget_stays_burnt() -> None:
    # Unseen overhead keeps every real prompt count at the threshold: no compaction is confirmed.
    settings = HostSettings(context_length=200_000, fixed_overhead_tokens=THRESHOLD)
    result = replay(marathon(), Summarizing(THRESHOLD), settings)
    assert len(_gated(result)) <= settings.max_attempts


def test_an_unchanged_rewrite_is_a_no_op_and_never_rearms() -> None:
    engine = Unchanged(THRESHOLD)
    result = replay(marathon(), engine, HostSettings(context_length=200_000))
    assert len(result.engine.calls) > 0  # the run owns a clone of the engine
    assert (result.compactions["outcome"] == "noop").all()
    assert result.summary["compactions"] == 0 and result.summary["prefix_breaks"] == 0
    assert len(_gated(result)) <= 3


def test_an_engine_progress_flag_decides_the_rearm() -> None:
    # Same rewrites as the re-arming plugin engine above, but the engine's own flag says "no progress":
    # the host believes the flag, so the turn's budget is spent after max_attempts committed passes.
    settings = HostSettings(context_length=200_000)
    result = replay(marathon(), FlagsNoProgress(THRESHOLD), settings)
    assert (_gated(result)["outcome"] == "committed").all()
    assert len(_gated(result)) <= settings.max_attempts
