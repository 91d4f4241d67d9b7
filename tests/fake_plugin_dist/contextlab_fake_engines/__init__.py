"""A minimal third-party engine: trims nothing, counts what it saw."""

from __future__ import annotations

from typing import Any

from agent.context_engine import ContextEngine


class EchoEngine(ContextEngine):
    """Echo: never compresses; the smallest engine a third party could ship."""

    def __init__(self, label: str = "echo") -> None:
        self.label = label

    @property
    def name(self) -> str:
        return "fake_echo"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> list[dict[str, Any]]:
        return messages
