"""Engines that fail in each way a sweep must survive (bench / report / plot tests).

Importable as ``tests.synthetic`` (the repo root is on ``sys.path``), so process-pool workers can unpickle
the engine classes defined here.
"""

from __future__ import annotations

from typing import Any

from contextlab.engine import ContextEngine, Message


class ExplodingEngine(ContextEngine):
    """Raises from a required hook on the first request: its run must fail, the sweep must not."""

    @property
    def name(self) -> str:
        return "exploding"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        return None

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        raise RuntimeError("boom in should_compress")

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        return messages


class BrokenInitEngine(ContextEngine):
    """Cannot even be constructed."""

    def __init__(self) -> None:
        raise ValueError("cannot start")

    @property
    def name(self) -> str:
        return "broken_init"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        return None

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


class DyingEngine(ExplodingEngine):
    """Kills its worker process outright (as a segfault would): no exception ever reaches the host."""

    @property
    def name(self) -> str:
        return "dying"

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        import os

        os._exit(3)
