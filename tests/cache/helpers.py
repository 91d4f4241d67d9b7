"""Builders for cache tests: requests made of text messages with chosen token counts."""

from __future__ import annotations

from typing import Any

from contextlab.cache.blocks import BlockRenderer, RenderedRequest


def msg(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": text, **extra}


def conversation(n: int, *, prefix: str = "m") -> list[dict[str, Any]]:
    """``n`` alternating user/assistant text messages with distinct contents."""
    return [msg("user" if i % 2 == 0 else "assistant", f"{prefix}{i}") for i in range(n)]


def render(
    messages: list[dict[str, Any]],
    tokens: int | list[int] = 100,
    *,
    renderer: BlockRenderer | None = None,
    tools: list[dict[str, Any]] | None = None,
    tools_tokens: int = 0,
    overhead: int = 0,
) -> RenderedRequest:
    counts = tokens if isinstance(tokens, list) else [tokens] * len(messages)
    return (renderer or BlockRenderer()).render(messages, counts, tools or [], tools_tokens, overhead_tokens=overhead)
