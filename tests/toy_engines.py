"""Tiny engines that exercise one host rule each (used by the host tests)."""

from __future__ import annotations

import threading
from typing import Any

from contextlab.engine import ContextEngine, Message


class BaseToy(ContextEngine):
    """Tracks usage like the host expects; never compresses unless a subclass says so."""

    def __init__(self, threshold_tokens: int = 10**9) -> None:
        self._fixed_threshold = threshold_tokens
        self.threshold_tokens = threshold_tokens
        self.calls: list[tuple[str, Any]] = []
        self.usages: list[dict[str, Any]] = []

    @property
    def name(self) -> str:
        return "toy"

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        self.context_length = context_length
        self.threshold_tokens = self._fixed_threshold
        self.calls.append(("update_model", (model, context_length)))

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.usages.append(dict(usage))
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        self.calls.append(("compress", {"n": len(messages), "focus_topic": focus_topic, "force": force}))
        return messages


class KeepLastEngine(BaseToy):
    """Compresses to the last ``keep`` messages, cut at a safe point (never inside a tool group)."""

    def __init__(self, threshold_tokens: int = 2_000, keep: int = 4) -> None:
        super().__init__(threshold_tokens)
        self.keep = keep

    @property
    def name(self) -> str:
        return "keep-last"

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        self.calls.append(("compress", {"n": len(messages), "focus_topic": focus_topic, "force": force}))
        cut = max(0, len(messages) - self.keep)
        while cut < len(messages) and messages[cut].get("role") == "tool":
            cut += 1
        if cut == 0:
            return messages
        self.compression_count += 1
        summary = {"role": "user", "content": f"[summary of {cut} earlier messages] focus={focus_topic}"}
        return [summary, *messages[cut:]]


class ThreeArgEngine(KeepLastEngine):
    """An old-style engine whose ``compress`` takes only (messages, current_tokens, focus_topic)."""

    @property
    def name(self) -> str:
        return "three-arg"

    def compress(
        self, messages: list[Message], current_tokens: int | None = None, focus_topic: str | None = None
    ) -> list[Message]:  # type: ignore[override]
        return super().compress(messages, current_tokens, focus_topic)


class RecordingEngine(BaseToy):
    """Records every hook the host calls, in order."""

    @property
    def name(self) -> str:
        return "recording"

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.calls.append(("on_session_start", (session_id, kwargs)))

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        self.calls.append(("on_session_end", (session_id, len(messages))))

    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.calls.append(("on_turn_complete", {"messages": messages, "usage": usage, **kwargs}))


class SelectingEngine(BaseToy):
    """``select_context`` returns whatever ``choose`` computes (for the fail-open tests)."""

    def __init__(self, choose: Any) -> None:
        super().__init__()
        self.choose = choose
        self.seen: list[dict[str, Any]] = []

    @property
    def name(self) -> str:
        return "selecting"

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: list[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message] | None:
        self.seen.append(
            {
                "request": request_messages,
                "conversation": conversation_messages,
                "incoming": incoming_message,
                "budget": budget_tokens,
            }
        )
        return self.choose(request_messages, conversation_messages, incoming_message)  # type: ignore[no-any-return]


class SlowEngine(KeepLastEngine):
    """``compress`` blocks until released: exercises the host timeout."""

    release = threading.Event()  # shared by clones (an Event cannot be deep-copied)

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        self.release.wait(5)
        return super().compress(messages, current_tokens, focus_topic, force)


class GrowingEngine(BaseToy):
    """Returns a longer history than it was given: the host's anti-growth guard must refuse it."""

    def __init__(self) -> None:
        super().__init__(2_000)

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        return [*messages, {"role": "user", "content": "padding " * 500}]


class PruningEngine(BaseToy):
    """Blocks compaction and prunes tool results instead (the post-tool blocked path)."""

    def __init__(self, mode: str = "new") -> None:
        super().__init__(2_000)
        self.mode = mode
        self.prune_calls = 0

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def prune_tool_results_only(
        self, messages: list[Message], current_tokens: int | None = None
    ) -> tuple[list[Message], int]:
        self.prune_calls += 1
        if self.mode == "same-object":
            for m in messages:
                if m.get("role") == "tool":
                    m["content"] = "[pruned]"
            return messages, 3
        if self.mode == "zero":
            return [dict(m) for m in messages], 0
        out, n = [], 0
        for m in messages:
            if m.get("role") == "tool" and m.get("content") != "[pruned]":
                m = {**m, "content": "[pruned]"}
                n += 1
            out.append(m)
        return out, n


class FailingEngine(BaseToy):
    """Raises from a chosen method."""

    def __init__(self, where: str) -> None:
        super().__init__(2_000)
        self.where = where

    @property
    def name(self) -> str:
        return "failing"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        if self.where == "update_from_response" and len(self.usages) >= 2:
            raise RuntimeError("boom in update_from_response")
        super().update_from_response(usage)

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        if self.where == "compress":
            raise RuntimeError("boom in compress")
        return messages

    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.where == "on_turn_complete":
            raise RuntimeError("boom in on_turn_complete")
