"""Transcript host events the replay acts on: ``/new`` and ``/reset``, provider retries, usage-less
responses; and the copy ``on_turn_complete`` observes (``docs/host-loop.md`` §Observation and
§Sessions)."""

from __future__ import annotations

from dataclasses import dataclass, field

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.model import Transcript

SESSION_KINDS = ("new", "reset")


@dataclass(frozen=True)
class HostEventPlan:
    """A transcript's host events, indexed for the replay loop.

    Attributes:
        session_starts: ``{message index: "new" | "reset"}``: a session boundary before that message.
        retries: ``{assistant index: extra attempts}`` before the request that got the response.
        usage_missing: Assistant indices whose response carried no usage.
    """

    session_starts: dict[int, str] = field(default_factory=dict)
    retries: dict[int, int] = field(default_factory=dict)
    usage_missing: frozenset[int] = frozenset()

    @classmethod
    def of(cls, transcript: Transcript) -> HostEventPlan:
        """Index ``transcript.host_events``; a misplaced event is one clear error naming it."""
        starts: dict[int, str] = {}
        retries: dict[int, int] = {}
        missing: set[int] = set()
        messages = transcript.messages
        for number, event in enumerate(transcript.host_events):
            index = event.message_index
            where = f"host_events[{number}]"
            if not 0 <= index < len(messages):
                raise TranscriptError(
                    transcript.source or transcript.transcript_id,
                    where,
                    f"message_index {index} is outside the {len(messages)} messages",
                )
            role = messages[index].get("role")
            if event.kind in SESSION_KINDS:
                if role != "user":
                    raise TranscriptError(
                        transcript.source or transcript.transcript_id,
                        where,
                        f"/{event.kind} must precede a user message, message {index} is {role!r}",
                    )
                starts[index] = event.kind
            else:
                if role != "assistant":
                    raise TranscriptError(
                        transcript.source or transcript.transcript_id,
                        where,
                        f"{event.kind} must name an assistant message, message {index} is {role!r}",
                    )
                if event.kind == "retry":
                    retries[index] = retries.get(index, 0) + event.count
                else:
                    missing.add(index)
        return cls(starts, retries, frozenset(missing))


def observation_copy(rows: list[Message]) -> list[Message]:
    """What ``on_turn_complete`` receives: a shallow copy (a new list of new dicts; nested values are
    shared, so the engine must treat them as read-only, as the plugin guide says)."""
    return [dict(row) for row in rows]
