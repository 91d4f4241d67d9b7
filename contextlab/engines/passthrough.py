"""``passthrough``: the control engine. Never compresses, never selects; tracks usage only."""

from __future__ import annotations

from typing import Any

from contextlab.engine import ContextEngine, Message


class PassthroughEngine(ContextEngine):
    """No context management at all: what the history costs when nothing is done.

    ``threshold_tokens`` is still derived (so traces show when a real engine would have acted),
    but :meth:`should_compress` is always False and :meth:`compress` returns its input.
    """

    def __init__(self, context_length: int = 0, threshold_percent: float = 0.75) -> None:
        self.context_length = context_length
        self.threshold_percent = threshold_percent
        self.threshold_tokens = int(context_length * threshold_percent)

    @property
    def name(self) -> str:
        return "passthrough"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or self.last_prompt_tokens + self.last_completion_tokens)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        return messages
