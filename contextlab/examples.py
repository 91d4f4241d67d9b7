"""What the notebooks and the dashboard run on: example transcripts and a small teaching engine.

Transcripts come from, in order: the project's own generated datasets (``<repo>/datasets``), then
the real recorded transcripts in ``$CONTEXTLAB_TRANSCRIPTS`` or ``<repo>/../shared/transcripts``.
When neither is there, :func:`example_transcripts` says so and how to point at them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contextlab.engine import ContextEngine, Message
from contextlab.errors import ConfigError
from contextlab.transcripts import Transcript, load_transcripts

REPO = Path(__file__).resolve().parent.parent
TAU_BENCH = Path("tau-bench-airline") / "gpt-4o-airline.json"


def shared_transcripts_dir() -> Path | None:
    """``$CONTEXTLAB_TRANSCRIPTS``, else ``<repo>/../shared/transcripts``, when it exists."""
    configured = os.environ.get("CONTEXTLAB_TRANSCRIPTS")
    candidates = [Path(configured)] if configured else []
    candidates.append(REPO.parent / "shared" / "transcripts")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return None


def example_transcripts(limit: int | None = None, *, longest: bool = True) -> list[Transcript]:
    """Example conversations for notebooks: the tau-bench airline recordings when present.

    Args:
        limit: Return at most this many.
        longest: Order by number of requests, longest first (more room for compaction to show).

    Raises:
        ConfigError: No example data was found (the message says where it was looked for).
    """
    folder = shared_transcripts_dir()
    if folder is None or not (folder / TAU_BENCH).is_file():
        looked = os.environ.get("CONTEXTLAB_TRANSCRIPTS") or str(REPO.parent / "shared" / "transcripts")
        raise ConfigError(
            f"no example transcripts: {looked}/{TAU_BENCH} not found; set CONTEXTLAB_TRANSCRIPTS to "
            "the folder holding tau-bench-airline/, or pass your own transcript files"
        )
    found = load_transcripts(folder / TAU_BENCH)
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
