"""Deterministic parts the reference engines share (``engines.md`` §5.0).

Safe cut points, fixed placeholders, a memoized token estimate and tool-row bookkeeping. The
bundled plugins under ``plugins/context_engine/`` import this module, so they need contextlab to
be importable in whatever host runs them (the real Hermes host included: ``pip install contextlab``
next to it). Everything here is a pure function of its inputs: no clock, no randomness.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from contextlab.engine import Message
from contextlab.messages import content_text, tool_call_arguments, tool_call_name, tool_calls
from contextlab.tokens import RoughCounter

__all__ = [
    "CLEARED_PREFIX",
    "TokenEstimator",
    "clear_inputs_of_rows",
    "clear_placeholder",
    "cleared_arguments",
    "content_text",
    "engine_uid",
    "group_starts",
    "head_end",
    "is_safe_cut",
    "line_count",
    "mask_placeholder",
    "mask_view",
    "newest_user_index",
    "pressure",
    "safe_cut_at_or_after",
    "safe_cut_at_or_before",
    "tool_call_arguments",
    "tool_call_name",
    "tool_calls",
    "tool_names_by_call_id",
    "tool_result_rows",
    "tool_row_names",
    "track_usage",
    "truncate_to_budget",
    "with_content",
]

CLEARED_PREFIX = "[tool output cleared:"
"""Start of the default clearing placeholder; a row starting with it is already cleared."""


class TokenEstimator:
    """The host's rough estimator (chars/4 plus per-message overhead), memoized by content.

    Engines budget with the same figure the host's gates use, so an engine's "fits under the
    threshold" agrees with the host's.
    """

    def __init__(self) -> None:
        self._counter = RoughCounter()

    def message(self, message: Message) -> int:
        return self._counter.message(message)

    def messages(self, messages: Iterable[Message]) -> int:
        return sum(self._counter.message(m) for m in messages)

    def text(self, text: str) -> int:
        return self._counter.message({"role": "user", "content": text})


# --------------------------------------------------------------------------- cut points


def is_safe_cut(messages: Sequence[Message], index: int) -> bool:
    """True when a cut *before* ``index`` keeps every tool call with its results.

    A tool result always directly follows its assistant call (or a sibling result), so a cut is
    safe exactly where the next message is not a tool result; the end of the list is safe too.
    """
    if index <= 0 or index >= len(messages):
        return True
    return messages[index].get("role") != "tool"


def safe_cut_at_or_before(messages: Sequence[Message], index: int) -> int:
    """The nearest safe cut ``<= index`` (0 at worst)."""
    index = max(0, min(index, len(messages)))
    while index > 0 and not is_safe_cut(messages, index):
        index -= 1
    return index


def safe_cut_at_or_after(messages: Sequence[Message], index: int) -> int:
    """The nearest safe cut ``>= index`` (``len(messages)`` at worst)."""
    index = max(0, min(index, len(messages)))
    while index < len(messages) and not is_safe_cut(messages, index):
        index += 1
    return index


def group_starts(messages: Sequence[Message], start: int = 0, end: int | None = None) -> list[int]:
    """Start indices of the safe groups in ``messages[start:end]`` (a message plus its tool results)."""
    end = len(messages) if end is None else end
    return [i for i in range(start, end) if i == start or is_safe_cut(messages, i)]


def newest_user_index(messages: Sequence[Message]) -> int | None:
    """Index of the newest user message, or None."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return i
    return None


# --------------------------------------------------------------------------- tool rows


def tool_result_rows(messages: Sequence[Message]) -> list[int]:
    """Indices of tool-result messages, oldest first."""
    return [i for i, m in enumerate(messages) if m.get("role") == "tool"]


def tool_names_by_call_id(messages: Sequence[Message]) -> dict[str, str]:
    """``tool_call_id -> tool name`` from every assistant call (the last call with an id wins)."""
    names: dict[str, str] = {}
    for message in messages:
        for call in tool_calls(message):
            call_id = str(call.get("id") or "")
            if call_id:
                names[call_id] = tool_call_name(call)
    return names


def tool_row_names(messages: Sequence[Message]) -> dict[int, str]:
    """``tool row index -> tool name``, pairing each result with the nearest preceding call of its id.

    Provider ids repeat across turns (identical calls get identical deterministic ids), so a global
    id -> name map would name old rows after a later call.
    """
    names: dict[int, str] = {}
    open_calls: dict[str, str] = {}
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            open_calls = {str(c.get("id") or ""): tool_call_name(c) for c in tool_calls(message)}
        elif role == "tool":
            names[i] = open_calls.get(str(message.get("tool_call_id") or ""), "")
    return names


def line_count(text: str) -> int:
    """Lines in ``text`` (an empty text has 0 lines)."""
    return text.count("\n") + 1 if text else 0


def mask_placeholder(text: str) -> str:
    """SWE-agent's masking text: counts only, so the same row always masks to the same bytes."""
    return f"Old environment output: ({line_count(text)} lines omitted)"


def clear_placeholder(text: str, call_id: str) -> str:
    """The clearing placeholder: sizes and the call id only (no clock), cache-stable."""
    return f"{CLEARED_PREFIX} {len(text):,} chars, {line_count(text):,} lines; id={call_id}]"


def with_content(message: Message, content: str) -> Message:
    """A copy of ``message`` with new content; every other key (uids included) is kept."""
    out = dict(message)
    out["content"] = content
    out.pop("api_content", None)  # the host drops the exact-bytes sidecar on any rewrite
    return out


def cleared_arguments(call: dict[str, Any]) -> dict[str, Any]:
    """A copy of a tool call whose arguments are replaced by their size (``clear_tool_inputs``)."""
    fn = call.get("function")
    if not isinstance(fn, dict):
        return call
    size = len(tool_call_arguments(call))
    return {**call, "function": {**fn, "arguments": json.dumps({"cleared_chars": size})}}


def engine_uid(kind: str, text: str) -> str:
    """A 32-hex uid for an engine-authored row, derived from its content (deterministic)."""
    return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()[:32]


# --------------------------------------------------------------------------- engine plumbing


def track_usage(engine: Any, usage: dict[str, Any]) -> None:
    """``update_from_response`` for engines that only record the counts (``{}`` gives zeros)."""
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    engine.last_prompt_tokens = prompt
    engine.last_completion_tokens = completion
    engine.last_total_tokens = int(usage.get("total_tokens") or prompt + completion)


def pressure(engine: Any, prompt_tokens: int | None) -> int:
    """The figure ``should_compress`` judges: the argument, else the last real prompt size."""
    value = engine.last_prompt_tokens if prompt_tokens is None else prompt_tokens
    return max(0, int(value or 0))


def head_end(messages: Sequence[Message]) -> int:
    """End (exclusive) of the protected head: leading system rows and the first user message."""
    for i, message in enumerate(messages):
        if message.get("role") == "user":
            return safe_cut_at_or_after(messages, i + 1)
        if message.get("role") not in ("system",):
            return safe_cut_at_or_before(messages, i)
    return len(messages)


def truncate_to_budget(messages: list[Message], budget: int, estimator: TokenEstimator) -> list[Message]:
    """Drop the oldest safe groups after the head until the rest fits ``budget`` (rough tokens).

    The newest user message is always kept, and at least one group survives after the head. Returns
    the input object when nothing can be dropped (the host's "no-op").
    """
    head = head_end(messages)
    starts = group_starts(messages, head)
    if len(starts) < 2:
        return messages
    newest_user = newest_user_index(messages)
    total = estimator.messages(messages)
    cut = head
    for start in starts[1:]:
        if total <= budget:
            break
        if newest_user is not None and cut <= newest_user < start:
            break
        total -= estimator.messages(messages[cut:start])
        cut = start
    if cut == head:
        return messages
    return [*messages[:head], *messages[cut:]]


def mask_view(
    messages: Sequence[Message],
    *,
    window_m: int,
    polling: int,
    keep_first_observation: bool = True,
    exempt_tools: Iterable[str] = (),
    mask_inputs: bool = False,
) -> list[Message] | None:
    """Observation masking (SWE-agent ``_get_omit_indices``): a masked copy, or None when nothing is masked.

    Tool rows are numbered from 1; ``L = max(0, floor(n / polling) * polling - window_m)``; rows
    ``2..L`` (``1..L`` without ``keep_first_observation``) are masked, exempt tools skipped.
    """
    rows = tool_result_rows(messages)
    n = len(rows)
    limit = max(0, (n // max(1, polling)) * max(1, polling) - window_m)
    first = 2 if keep_first_observation else 1
    if limit < first:
        return None
    exempt = set(exempt_tools)
    names = tool_row_names(messages) if exempt else {}
    out = list(messages)
    masked_rows: list[int] = []
    for number in range(first, limit + 1):
        index = rows[number - 1]
        row = messages[index]
        if exempt and names.get(index) in exempt:
            continue
        out[index] = with_content(row, mask_placeholder(content_text(row)))
        masked_rows.append(index)
    if mask_inputs:
        clear_inputs_of_rows(out, masked_rows)
    return out


def clear_inputs_of_rows(out: list[Message], rows: Iterable[int]) -> None:
    """Replace, in place in ``out``, the arguments of the calls that produced tool rows ``rows``.

    Each row is paired with the nearest preceding assistant (provider ids repeat across turns).
    """
    callers: dict[int, set[str]] = {}
    for index in rows:
        caller = next((j for j in range(index - 1, -1, -1) if out[j].get("role") == "assistant"), None)
        if caller is not None:
            callers.setdefault(caller, set()).add(str(out[index].get("tool_call_id") or ""))
    for caller, ids in callers.items():
        message = out[caller]
        new_calls = [cleared_arguments(c) if str(c.get("id") or "") in ids else c for c in tool_calls(message)]
        out[caller] = {**message, "tool_calls": new_calls}
