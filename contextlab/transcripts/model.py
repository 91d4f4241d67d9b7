"""The normalized transcript: what every importer produces and every replay consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextlab.engine import Message

COMPACT_SUMMARY_KIND = "compact_summary"
"""``display_kind`` of a recorded compaction summary kept as a user row (Claude Code, Hermes)."""

HARNESS_KINDS: frozenset[str] = frozenset(
    {
        COMPACT_SUMMARY_KIND,
        "meta",  # Claude Code isMeta rows: command caveats, skill bodies
        "demo",  # SWE-agent demonstrations
        "interrupt",  # "[Request interrupted by user ...]"
        "task_notification",  # a background task finished
        "command",  # a slash command line (/compact, /mcp, ...)
        "command_output",  # what a local command printed
        "observation",  # an environment's output sent as a user row (mini-swe-agent, SWE-agent)
    }
)
"""``display_kind`` marks of user-role rows the agent's harness wrote, not the person: they are sent
like any user row, but the measurement layer never reads them as a user's ask or instruction."""


FENCED_ACTIONS = "none: command outputs are user messages"
"""``metadata["tool_calls"]`` of a transcript whose agent acts through fenced shell blocks in its
messages instead of tool calls, its environment answering as user rows (mini-swe-agent)."""


def written_by_person(message: Message) -> bool:
    """A user row a person wrote: role ``user`` and no harness mark (:data:`HARNESS_KINDS`)."""
    return message.get("role") == "user" and message.get("display_kind") not in HARNESS_KINDS


@dataclass(frozen=True)
class RecordedUsage:
    """Provider usage recorded for one assistant message, normalized.

    ``prompt_tokens`` is the whole prompt (uncached input + cache reads + cache writes), as the host
    computes it; ``raw`` keeps the original object for provider-specific parsing.
    """

    prompt_tokens: int
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def input_tokens(self) -> int:
        """Prompt tokens neither read from nor written to the cache."""
        return max(0, self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens)


@dataclass(frozen=True)
class CompactionEvent:
    """A compaction in the recording (a real one, or a manual ``/compress`` to replay).

    ``message_index`` is the index of the first message after the compaction: for a manual event,
    the host compresses before the turn that starts there.
    """

    message_index: int
    trigger: str = "manual"  # "manual" or "auto"
    focus_topic: str | None = None
    pre_tokens: int | None = None
    summary: str | None = None


HOST_EVENT_KINDS: tuple[str, ...] = ("new", "reset", "retry", "no_usage")
"""What a :class:`HostEvent` records (``docs/host-loop.md`` §Transcript events)."""


@dataclass(frozen=True)
class HostEvent:
    """Something the host did or saw that is not a message, at ``message_index``.

    ``kind`` is one of :data:`HOST_EVENT_KINDS`:

    - ``"new"`` / ``"reset"``: the user typed ``/new`` or ``/reset`` just before message
      ``message_index`` (which opens the new session; earlier rows belong to the old one).
    - ``"retry"``: the request answered by the assistant message at ``message_index`` was sent
      ``count`` extra times first (provider errors, then retried).
    - ``"no_usage"``: the response at ``message_index`` (an assistant message) carried no usage.
    """

    message_index: int
    kind: str
    count: int = 1

    def __post_init__(self) -> None:
        if self.kind not in HOST_EVENT_KINDS:
            raise ValueError(f"host event kind must be one of {HOST_EVENT_KINDS}, got {self.kind!r}")
        if self.count < 1:
            raise ValueError(f"host event count must be >= 1, got {self.count}")


@dataclass(frozen=True)
class GoldFact:
    """A literal string planted in (or mined from) the transcript, for retention probes."""

    fact_id: str
    text: str
    message_index: int
    category: str = "recall"  # recall | artifact | continuation | decision
    needed_later: bool = False


@dataclass
class Transcript:
    """One recorded conversation: messages (system prompt kept apart) plus what the recording knows.

    ``usage`` and ``timestamps`` are keyed by message index in :attr:`messages`.
    """

    transcript_id: str
    messages: list[Message]
    system_prompt: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[int, RecordedUsage] = field(default_factory=dict)
    timestamps: dict[int, float] = field(default_factory=dict)
    events: list[CompactionEvent] = field(default_factory=list)
    host_events: list[HostEvent] = field(default_factory=list)
    facts: list[GoldFact] = field(default_factory=list)
    source: str = ""
    source_format: str = "openai"
    model: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def n_requests(self) -> int:
        """Provider requests in the recording: one per assistant message."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    def __repr__(self) -> str:
        return (
            f"Transcript({self.transcript_id!r}, messages={len(self.messages)}, "
            f"requests={self.n_requests}, format={self.source_format!r})"
        )
