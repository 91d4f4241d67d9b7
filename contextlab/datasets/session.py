"""Appending a generated agent session message by message, with timestamps and gold facts.

A generator calls :meth:`SessionBuilder.user`, :meth:`SessionBuilder.step` (one provider request:
an assistant message, its tool calls and their results) and :meth:`SessionBuilder.plant` /
:meth:`SessionBuilder.use` for facts; :meth:`SessionBuilder.transcript` returns the result.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextlab.engine import Message
from contextlab.messages import content_text, tool_call_arguments, tool_calls
from contextlab.transcripts.model import GoldFact, Transcript

START_EPOCH = 1767261600.0  # 2026-01-01T10:00:00Z: a fixed origin keeps the files reproducible
FACT_CATEGORIES = ("recall", "artifact", "continuation", "decision")


@dataclass(frozen=True)
class Call:
    """One tool call of a step and the output the tool returned."""

    name: str
    arguments: dict[str, Any]
    output: str


class SessionBuilder:
    """Collects messages, timestamps and facts of one generated session."""

    def __init__(self, rng: random.Random, start: float = START_EPOCH) -> None:
        self.rng = rng
        self.messages: list[Message] = []
        self.timestamps: dict[int, float] = {}
        self.facts: list[GoldFact] = []
        self.fact_uses: dict[str, list[int]] = {}
        self.clock = start
        self._call_serial = 0

    # ------------------------------------------------------------------ messages

    def user(self, text: str, gap: tuple[float, float] = (40.0, 600.0)) -> int:
        """A user message after a think-and-type pause of ``gap`` seconds."""
        return self._append({"role": "user", "content": text}, gap)

    def step(self, text: str | None, calls: Sequence[Call] = (), gap: tuple[float, float] = (3.0, 25.0)) -> int:
        """One provider request: the assistant message (text and/or calls) then each tool result."""
        message: Message = {"role": "assistant", "content": text}
        ids = []
        if calls:
            entries = []
            for call in calls:
                self._call_serial += 1
                call_id = f"call_{self._call_serial:05d}_{self.rng.randrange(16**8):08x}"
                ids.append(call_id)
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                entries.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments},
                    }
                )
            message["tool_calls"] = entries
        index = self._append(message, gap)
        for call, call_id in zip(calls, ids, strict=True):
            self._append({"role": "tool", "tool_call_id": call_id, "content": call.output}, (0.2, 6.0))
        return index

    def _append(self, message: Message, gap: tuple[float, float]) -> int:
        self.clock += round(self.rng.uniform(*gap), 3)
        index = len(self.messages)
        self.messages.append(message)
        self.timestamps[index] = round(self.clock, 3)
        return index

    @property
    def last_tool_index(self) -> int:
        """Index of the most recent tool result."""
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i]["role"] == "tool":
                return i
        raise ValueError("no tool message yet")

    # ------------------------------------------------------------------ facts

    def plant(self, fact_id: str, text: str, index: int, category: str, needed_later: bool) -> GoldFact:
        """Record a fact whose literal ``text`` is in message ``index``."""
        if category not in FACT_CATEGORIES:
            raise ValueError(f"unknown fact category {category!r}")
        if text not in _searchable(self.messages[index]):
            raise ValueError(f"fact {fact_id!r} text {text!r} is not in message {index}")
        fact = GoldFact(fact_id=fact_id, text=text, message_index=index, category=category, needed_later=needed_later)
        self.facts.append(fact)
        return fact

    def use(self, fact: GoldFact, index: int) -> None:
        """Note that message ``index`` (later than the fact) relies on it."""
        if index <= fact.message_index:
            raise ValueError(f"fact {fact.fact_id!r} used at {index}, before it was planted")
        if fact.text not in _searchable(self.messages[index]):
            raise ValueError(f"fact {fact.fact_id!r} text not in message {index}")
        self.fact_uses.setdefault(fact.fact_id, []).append(index)

    # ------------------------------------------------------------------ result

    def transcript(
        self,
        transcript_id: str,
        system_prompt: str,
        tools: list[dict[str, Any]],
        model: str,
        metadata: dict[str, Any],
    ) -> Transcript:
        """The finished session; facts never used later must not claim ``needed_later``."""
        for fact in self.facts:
            if fact.needed_later and fact.fact_id not in self.fact_uses:
                raise ValueError(f"fact {fact.fact_id!r} is marked needed_later but never used")
        return Transcript(
            transcript_id=transcript_id,
            messages=self.messages,
            system_prompt=system_prompt,
            tools=tools,
            timestamps=self.timestamps,
            facts=sorted(self.facts, key=lambda f: (f.message_index, f.fact_id)),
            source_format="contextlab-generated",
            model=model,
            metadata={**metadata, "fact_uses": {k: v for k, v in sorted(self.fact_uses.items())}},
        )


def _searchable(message: Message) -> str:
    """Content text plus tool-call arguments: where a planted string may live."""
    parts = [content_text(message)]
    parts += [tool_call_arguments(c) for c in tool_calls(message)]
    return "\n".join(parts)


def function_tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An OpenAI function tool schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }
