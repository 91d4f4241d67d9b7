"""Deterministic conversations the conformance kit drives every engine through.

They are built in code (seeded) so the kit works on a fresh machine without any data files, and
they are shaped to hit the contract's corners: parallel tool calls, large and multi-line tool
outputs, error lines, file paths, several user turns, a tool loop long enough to force compaction,
a plain chat without tools, and provider tool-call ids that repeat across turns.
"""

from __future__ import annotations

import json
import random
from typing import Any

from contextlab.engine import Message
from contextlab.transcripts.model import Transcript

_WORDS = (
    "cache",
    "prefix",
    "token",
    "budget",
    "engine",
    "summary",
    "window",
    "parser",
    "retry",
    "config",
    "schema",
    "index",
    "router",
    "session",
    "branch",
    "commit",
    "deploy",
    "metric",
    "latency",
    "buffer",
    "socket",
    "worker",
    "queue",
    "shard",
    "replica",
)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def coding_session(seed: int = 0, turns: int = 6, loops: int = 7) -> Transcript:
    """A tool-heavy coding session: reads, edits, test runs with errors, parallel calls."""
    rng = random.Random(f"contextlab-conformance-coding-{seed}")
    messages: list[Message] = []
    counter = 0
    for turn in range(turns):
        messages.append(
            {
                "role": "user",
                "content": f"Task {turn}: fix the {_text(rng, 3)} bug in src/mod_{turn}.py. "
                f"You must keep the public API. {_text(rng, 12)}",
            }
        )
        for step in range(loops):
            calls = []
            width = 2 if step % 3 == 1 else 1
            for k in range(width):
                counter += 1
                path = f"src/mod_{turn}_{step}_{k}.py"
                name = ("read_file", "run_tests", "edit_file")[(step + k) % 3]
                calls.append(_call(f"call_{counter:04d}", name, {"path": path}))
            messages.append(
                {
                    "role": "assistant",
                    "content": f"I will inspect it because {_text(rng, 8)}.",
                    "tool_calls": calls,
                }
            )
            for call in calls:
                lines = [f"{i:4d}  {_text(rng, 10)}" for i in range(rng.randint(20, 70))]
                if call["function"]["name"] == "run_tests":
                    lines.append(
                        f"ERROR test_{rng.randint(1, 99)} failed: AssertionError at 0x{rng.getrandbits(32):08x}"
                    )
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "\n".join(lines)})
        messages.append(
            {"role": "assistant", "content": f"Decided: the fix is {_text(rng, 10)}. Done with task {turn}."}
        )
    return Transcript(
        f"conformance-coding-{seed}",
        messages,
        system_prompt="You are a careful coding agent.",
        source="contextlab.conformance_data",
        source_format="generated",
        model="gpt-4o",
    )


def chat_session(seed: int = 0, turns: int = 24) -> Transcript:
    """A long chat without tools (engines must cope with no tool rows at all)."""
    rng = random.Random(f"contextlab-conformance-chat-{seed}")
    messages: list[Message] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Question {turn}: {_text(rng, 40)}?"})
        messages.append({"role": "assistant", "content": f"Answer {turn}: {_text(rng, 160)}."})
    return Transcript(
        f"conformance-chat-{seed}",
        messages,
        system_prompt="You are helpful.",
        source="contextlab.conformance_data",
        source_format="generated",
        model="gpt-4o",
    )


def repeated_ids_session(seed: int = 0, turns: int = 8) -> Transcript:
    """Identical calls reuse one provider id across turns (Hermes' deterministic ``call_<12hex>`` ids)."""
    rng = random.Random(f"contextlab-conformance-repeat-{seed}")
    messages: list[Message] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Check the status again ({turn}). {_text(rng, 6)}"})
        for _ in range(3):
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_call("call_5f2a9c0e11aa", "status", {"verbose": True})],
                }
            )
            body = "\n".join(_text(rng, 12) for _ in range(rng.randint(30, 60)))
            messages.append({"role": "tool", "tool_call_id": "call_5f2a9c0e11aa", "content": body})
        messages.append({"role": "assistant", "content": f"Status: {_text(rng, 20)}."})
    return Transcript(
        f"conformance-repeat-{seed}",
        messages,
        system_prompt=None,
        source="contextlab.conformance_data",
        source_format="generated",
        model="gpt-4o",
    )


def conformance_transcripts() -> list[Transcript]:
    """The built-in conformance conversations, in a fixed order."""
    return [coding_session(), chat_session(), repeated_ids_session()]
