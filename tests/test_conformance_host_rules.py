"""Conformance rules for the host-loop contract (docs/host-loop.md): each with an engine that passes
and one that fails."""

from __future__ import annotations

from typing import Any

from contextlab.conformance_data import coding_session
from contextlab.conformance_reach import check_reach
from contextlab.engine import ContextEngine, Message
from contextlab.testing import RULES, check_engine
from contextlab.tokens import RoughCounter


class Quiet(ContextEngine):
    """A correct engine that never compresses."""

    @property
    def name(self) -> str:
        return "quiet"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(self, messages: list[Message], current_tokens: int | None = None, **kwargs: Any) -> list[Message]:
        return messages


class CountTail(Quiet):
    """Summarizes all but a 20-message tail: in a single-turn tool loop the tail alone can hold
    more than the threshold, so compaction cannot bring the history under it."""

    tail = 20

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return (prompt_tokens or self.last_prompt_tokens) >= self.threshold_tokens > 0

    def compress(self, messages: list[Message], current_tokens: int | None = None, **kwargs: Any) -> list[Message]:
        cut = self._cut(messages)
        while cut < len(messages) and messages[cut].get("role") == "tool":
            cut += 1
        if cut <= 1 or cut >= len(messages):
            return messages
        return [messages[0], {"role": "user", "content": f"[summary of {cut - 1} messages]"}, *messages[cut:]]

    def _cut(self, messages: list[Message]) -> int:
        return len(messages) - self.tail


class TokenTail(CountTail):
    """The same, with the tail also bounded to a fifth of the threshold in tokens."""

    def _cut(self, messages: list[Message]) -> int:
        rough, spent, cut = RoughCounter(), 0, len(messages)
        while cut > max(1, len(messages) - self.tail):
            cost = rough.message(messages[cut - 1])
            if cut < len(messages) and spent + cost > self.threshold_tokens // 5:
                break
            spent += cost
            cut -= 1
        return cut


class ScribblingObserver(Quiet):
    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        messages[0]["content"] = "scribbled"


class ReadingObserver(Quiet):
    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.seen = [m.get("content") for m in messages]


def _report(engine: type[ContextEngine]) -> Any:
    return check_engine(engine, transcripts=[coding_session(turns=3, loops=4)], replay_checks=False)


def test_the_rules_are_listed() -> None:
    assert "turn_copy_read_only" in RULES and "compacts_under_threshold" in RULES


def test_a_count_only_tail_fails_compacts_under_threshold_and_a_token_bound_passes() -> None:
    assert check_reach(CountTail()) is not None
    assert check_reach(TokenTail()) is None
    failing = _report(CountTail)
    assert "compacts_under_threshold" in failing.failed_rules(), failing.format()
    assert "still" in next(f.detail for f in failing.failures if f.rule == "compacts_under_threshold")
    passing = _report(TokenTail)
    assert "compacts_under_threshold" not in passing.failed_rules(), passing.format()


def test_an_engine_that_never_compresses_promises_nothing() -> None:
    assert check_reach(Quiet()) is None


def test_an_engine_that_writes_into_on_turn_complete_messages_fails_turn_copy_read_only() -> None:
    failing = _report(ScribblingObserver)
    assert failing.failed_rules() == ["turn_copy_read_only"], failing.format()
    assert _report(ReadingObserver).ok, _report(ReadingObserver).format()
