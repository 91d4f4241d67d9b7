"""Synthetic transcripts and small engines for the notebook / plot / bench / widget tests.

Importable as ``tests.synthetic`` (the repo root is on ``sys.path``), so process-pool workers can unpickle
the engine classes defined here.
"""

from __future__ import annotations

import json
import random
from typing import Any

from contextlab.engine import ContextEngine, Message
from contextlab.transcripts import Transcript


def make_transcript(turns: int = 8, tool_words: int = 300, seed: int = 0, name: str = "synthetic") -> Transcript:
    """A tool-using conversation: per turn a user ask, a tool call, a large tool result, a reply."""
    rng = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    messages: list[Message] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Turn {turn}: look up record {turn} and summarise it."})
        call_id = f"call_{turn}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": json.dumps({"record": turn})},
                    }
                ],
            }
        )
        body = " ".join(rng.choice(words) for _ in range(tool_words))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"record {turn}: {body}"})
        messages.append({"role": "assistant", "content": f"Record {turn} is mostly about {rng.choice(words)}."})
    return Transcript(transcript_id=name, messages=messages, system_prompt="You are a careful assistant.")


class SlidingWindowEngine(ContextEngine):
    """Keeps the last ``keep`` messages, cutting only at a user message so no tool result is orphaned."""

    def __init__(self, keep: int = 6, threshold_percent: float = 0.75) -> None:
        self.keep = keep
        self.threshold_percent = threshold_percent

    @property
    def name(self) -> str:
        return "sliding_window"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens > 0

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        cut = max(0, len(messages) - self.keep)
        while cut < len(messages) and messages[cut].get("role") != "user":
            cut += 1
        if cut == 0 or cut >= len(messages):
            return messages
        self.compression_count += 1
        note = f"[{cut} earlier messages dropped" + (f"; focus: {focus_topic}" if focus_topic else "") + "]"
        head = dict(messages[cut])
        head["content"] = f"{note}\n{head.get('content') or ''}"
        return [head, *messages[cut + 1 :]]


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
