"""A general plugin module: ``register(ctx)`` registers one engine (a second one is refused)."""

from __future__ import annotations

from typing import Any

from contextlab_fake_engines import EchoEngine


class RegisteredEngine(EchoEngine):
    @property
    def name(self) -> str:
        return "fake_registered"


def register(ctx: Any) -> None:
    ctx.register_context_engine(RegisteredEngine(label="first"))
    ctx.register_context_engine(RegisteredEngine(label="second"))  # refused with a warning
