"""Split a recorded message list into turns and provider requests (the open-loop replay plan)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from contextlab.engine import Message


class Step(NamedTuple):
    """One provider request: the recorded assistant message and the tool results that answered it.

    (A named tuple: one is built per request, and a frozen dataclass costs ten times as much to build.)
    """

    assistant_index: int
    tool_indices: tuple[int, ...] = ()


@dataclass(frozen=True)
class Turn:
    """A user message (None for assistant output before any user) and every request up to the next one.

    ``lead_indices`` are the non-request rows that open the turn (the user message, or a stray
    system or tool row); ``steps`` are the requests.
    """

    index: int
    user_index: int | None
    lead_indices: tuple[int, ...]
    steps: tuple[Step, ...] = field(default_factory=tuple)


def plan_turns(messages: list[Message]) -> list[Turn]:
    """Turns in order. A ``user`` message opens a turn; each ``assistant`` message is one request;
    ``tool`` messages after it are its results. Other rows join the lead of the current turn."""
    turns: list[Turn] = []
    lead: list[int] = []
    user_index: int | None = None
    steps: list[Step] = []
    current_tools: list[int] = []
    current_assistant: int | None = None

    def close_step() -> None:
        nonlocal current_assistant, current_tools
        if current_assistant is not None:
            steps.append(Step(current_assistant, tuple(current_tools)))
        current_assistant, current_tools = None, []

    def close_turn() -> None:
        nonlocal lead, user_index, steps
        close_step()
        if lead or steps:
            turns.append(Turn(len(turns), user_index, tuple(lead), tuple(steps)))
        lead, user_index, steps = [], None, []

    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "user":
            close_turn()
            lead, user_index = [i], i
        elif role == "assistant":
            close_step()
            current_assistant = i
        elif role == "tool" and current_assistant is not None:
            current_tools.append(i)
        elif steps or current_assistant is not None:
            # A stray row (system, orphan tool) inside the request loop: it rides with the next turn
            # boundary as a lead row of a new, user-less turn.
            close_turn()
            lead = [i]
        else:
            lead.append(i)
    close_turn()
    return turns
