"""Builders for cache tests: requests made of text messages with chosen token counts."""

from __future__ import annotations

import struct
from typing import Any

from contextlab.cache.blocks import BlockRenderer, RenderedRequest
from contextlab.cache.prefix_keys import BASES, PRIMES


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


def plain_prefix_keys(digests: list[bytes]) -> list[bytes]:
    """Prefix keys computed block by block with Python integers (the reference for the renderer's)."""
    lanes, keys = [0, 0, 0, 0], []
    for digest in digests:
        words = struct.unpack("<4I", digest)
        lanes = [(h * b + d) % p for h, b, d, p in zip(lanes, BASES, words, PRIMES, strict=True)]
        keys.append(struct.pack("<4I", *lanes))
    return keys
