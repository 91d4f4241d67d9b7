"""Small things to learn and test with: a tool-loop conversation generator, a teaching engine, and
the lookup of recorded example transcripts.

:func:`tool_conversation` builds the smallest realistic agent session (user ask, tool call, tool
result, reply per turn); :class:`RecentTurnsEngine` is the sliding-window engine the notebooks, the
dashboard and the tests share. :func:`example_transcripts` reads recordings from a folder you name
or ``$CONTEXTLAB_TRANSCRIPTS``; the library never guesses a workspace path.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from contextlab.engine import ContextEngine, Message
from contextlab.errors import ConfigError
from contextlab.transcripts import Transcript, load_transcripts

TAU_BENCH = Path("tau-bench-airline") / "gpt-4o-airline.json"
FILLER_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def tool_conversation(
    turns: int,
    tool_chars: int = 400,
    *,
    with_tools: bool = True,
    system: str | None = "You are terse.",
    seed: int | None = None,
    name: str = "synthetic",
) -> Transcript:
    """A tool-loop session: per turn a user ask, a ``read_file`` call, its result and a reply.

    Args:
        turns: Number of user turns.
        tool_chars: Rough size of each tool result in characters.
        with_tools: False gives plain user/assistant turns.
        system: The system prompt (None for none).
        seed: None fills tool results with one repeated line (cheap to reason about in tests);
            an integer fills them with seeded words, so transcripts with different seeds differ.
        name: The transcript id.
    """
    rng = random.Random(seed)
    messages: list[Message] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Turn {turn}: please check file_{turn}.py"})
        if with_tools:
            call_id = f"call_{turn:04d}"
            arguments = f'{{"path": "file_{turn}.py"}}'
            function = {"name": "read_file", "arguments": arguments}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": call_id, "type": "function", "function": function}],
                }
            )
            body = _filler(tool_chars, rng if seed is not None else None)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": f"# file_{turn}.py\n{body}"})
        messages.append({"role": "assistant", "content": f"File {turn} looks fine."})
    return Transcript(name, messages, system_prompt=system)


def _filler(chars: int, rng: random.Random | None) -> str:
    if rng is None:
        return "x = 1\n" * (chars // 6)
    words: list[str] = []
    size = 0
    while size < chars:
        words.append(rng.choice(FILLER_WORDS))
        size += len(words[-1]) + 1
    return " ".join(words)


def shared_transcripts_dir(folder: Path | str | None = None) -> Path | None:
    """The recordings folder: ``folder`` when given, else ``$CONTEXTLAB_TRANSCRIPTS``, when it exists."""
    chosen = folder if folder is not None else os.environ.get("CONTEXTLAB_TRANSCRIPTS")
    if chosen is None:
        return None
    path = Path(chosen)
    return path if path.is_dir() else None


def example_transcripts(
    limit: int | None = None, *, longest: bool = True, folder: Path | str | None = None
) -> list[Transcript]:
    """Example conversations for notebooks: the tau-bench airline recordings.

    Args:
        limit: Return at most this many.
        longest: Order by number of requests, longest first (more room for compaction to show).
        folder: The recordings folder (default ``$CONTEXTLAB_TRANSCRIPTS``).

    Raises:
        ConfigError: No example data was found (the message says where it was looked for).
    """
    found_folder = shared_transcripts_dir(folder)
    if found_folder is None or not (found_folder / TAU_BENCH).is_file():
        looked = folder if folder is not None else os.environ.get("CONTEXTLAB_TRANSCRIPTS", "$CONTEXTLAB_TRANSCRIPTS")
        raise ConfigError(
            f"no example transcripts: {looked}/{TAU_BENCH} not found; set CONTEXTLAB_TRANSCRIPTS to "
            "the folder holding tau-bench-airline/, or pass your own transcript files"
        )
    found = load_transcripts(found_folder / TAU_BENCH)
    if longest:
        found = sorted(found, key=lambda t: -t.n_requests)  # stable: ties keep file order
    return found[:limit] if limit is not None else found


class RecentTurnsEngine(ContextEngine):
    """Teaching engine: past the threshold, keep only the last ``keep_turns`` user turns.

    It cuts only right before a user message, so an assistant ``tool_calls`` message and its tool
    results are always kept or dropped together (no orphaned tool rows). The first kept user
    message gets a one-line marker saying how much was dropped and the focus topic, if any.
    """

    def __init__(self, keep_turns: int = 2, threshold_percent: float = 0.75) -> None:
        if keep_turns < 1:
            raise ValueError(f"keep_turns must be >= 1, got {keep_turns}")
        self.keep_turns = keep_turns
        self.threshold_percent = threshold_percent

    @property
    def name(self) -> str:
        return "recent_turns"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return self.threshold_tokens > 0 and tokens >= self.threshold_tokens

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        starts = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if len(starts) <= self.keep_turns:
            return messages  # nothing safe to drop: the identical object means "no-op" to the host
        cut = starts[-self.keep_turns]
        marker = f"[context trimmed: {cut} earlier messages dropped"
        marker += f"; focus: {focus_topic}]" if focus_topic else "]"
        first = dict(messages[cut])
        content = first.get("content")
        first["content"] = f"{marker}\n{content}" if isinstance(content, str) else marker
        self.compression_count += 1
        return [first, *messages[cut + 1 :]]
