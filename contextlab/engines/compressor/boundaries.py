"""Where the compressor cuts: the protected head, the compressed middle and the protected tail
(``host-contract.md`` §2d steps 1 and 3).

``compress_start`` and ``compress_end`` delimit the middle ``messages[start:end]``. Every cut
lands on a safe index: never between an assistant's ``tool_calls`` and their results, never
leaving a leading tool row, and never dropping the newest real user turn.
"""

from __future__ import annotations

from collections.abc import Callable

from contextlab.engine import Message
from contextlab.engines.compressor.assembly import is_handoff, is_real_user_turn
from contextlab.engines.compressor.budgets import message_budget_tokens
from contextlab.messages import content_text, tool_calls

MIN_TAIL_FLOOR = 3
MIN_TAIL_CAP = 8
SOFT_CEILING = 1.5


def align_forward(messages: list[Message], index: int) -> int:
    """Skip tool rows at ``index`` (a middle or tail must not start with an orphaned result)."""
    while index < len(messages) and messages[index].get("role") == "tool":
        index += 1
    return index


def align_backward(messages: list[Message], index: int) -> int:
    """Move a cut before the assistant whose tool group it would split (or that ends right before it).

    The whole assistant + results group then stays together on the tail side of the cut.
    """
    if index <= 0 or index >= len(messages):
        return index
    check = index - 1
    while check >= 0 and messages[check].get("role") == "tool":
        check -= 1
    if check >= 0 and messages[check].get("role") == "assistant" and tool_calls(messages[check]):
        return check
    return index


def last_real_user(
    messages: list[Message], head_end: int = 0, is_user: Callable[[Message], bool] = is_real_user_turn
) -> int | None:
    """The newest real user turn at or after ``head_end`` (upstream ``_find_last_user_message_idx``;
    ``is_user``: the version's test of a row, see ``assembly.is_real_user_turn``)."""
    for i in range(len(messages) - 1, head_end - 1, -1):
        if is_user(messages[i]):
            return i
    return None


def _last_assistant(messages: list[Message], head_end: int) -> int | None:
    """The newest text-bearing non-summary assistant at or after ``head_end``, else the newest
    non-summary assistant of any kind (upstream ``_find_last_assistant_message_idx``)."""
    last_any: int | None = None
    for i in range(len(messages) - 1, head_end - 1, -1):
        message = messages[i]
        if message.get("role") != "assistant" or is_handoff(message):
            continue
        if last_any is None:
            last_any = i
        if content_text(message).strip():
            return i
    return last_any


def turn_pair_end(messages: list[Message], user: int) -> int:
    """Index just past ``user``, its assistant reply and that reply's tool results."""
    j = user + 1
    if j >= len(messages) or messages[j].get("role") != "assistant":
        return j
    return align_forward(messages, j + 1)


def min_tail(available: int, protect_last_n: int) -> int:
    """``min(max(3, min(protect_last_n, 8)), max(3, available − 2), available)``; 0 if available ≤ 1."""
    if available <= 1:
        return 0
    return min(max(MIN_TAIL_FLOOR, min(protect_last_n, MIN_TAIL_CAP)), max(MIN_TAIL_FLOOR, available - 2), available)


def soft_ceiling(budget: int) -> int:
    """The tail walk's soft ceiling: 1.5 × the budget (upstream ``_find_tail_cut_by_tokens``)."""
    return int(budget * SOFT_CEILING)


def _walk(costs: list[int], head_end: int, ceiling: int, floor: int, *, cut_at_break: bool) -> tuple[int, int]:
    """Newest first down to ``head_end`` inclusive; stop at the first row that would pass ``ceiling``
    once at least ``floor`` rows (counting that one) are behind the walk."""
    n = len(costs)
    acc = 0
    cut = n
    for i in range(n - 1, head_end - 1, -1):
        if acc + costs[i] > ceiling and n - i >= floor:
            return (i if cut_at_break else cut), acc
        acc += costs[i]
        cut = i
    return cut, acc


def tail_cut_by_tokens(
    messages: list[Message],
    head_end: int,
    budget: int,
    *,
    protect_last_n: int,
    min_tail_user_messages: int = 1,
    costs: list[int] | None = None,
    user_anchor: Callable[[Message], bool] = is_real_user_turn,
) -> int:
    """``compress_end``: the first tail index (upstream ``_find_tail_cut_by_tokens``).

    Args:
        messages: The (pruned) history.
        head_end: ``compress_start``.
        budget: The tail token budget; the walk may go to 1.5 × it.
        protect_last_n: Drives the minimum tail size.
        min_tail_user_messages: Keep at least this many real user messages in the tail.
        costs: Precomputed per-message budget tokens (computed when omitted).
        user_anchor: Which user rows the tail must keep the newest of (the version's test).
    """
    n = len(messages)
    if costs is None:
        costs = [message_budget_tokens(m) for m in messages]
    available = max(0, n - head_end - 1)
    floor = min_tail(available, protect_last_n)
    ceiling = soft_ceiling(budget)
    cut, acc = _walk(costs, head_end, ceiling, floor, cut_at_break=False)
    if cut <= head_end and 0 < acc <= ceiling:
        # The whole history fits the soft ceiling: re-cut with the raw budget (upstream #40803).
        cut, _ = _walk(costs, head_end, budget, floor, cut_at_break=True)
    cut = min(cut, n - floor)
    if cut <= head_end:
        cut = max(n - floor, head_end + 1)  # the minimum tail, never a cut glued to the head
    cut = align_backward(messages, cut)
    cut = _anchor_user(messages, cut, head_end, last_real_user(messages, head_end, user_anchor))
    reply = _last_assistant(messages, head_end)
    if reply is not None and reply < cut:
        cut = max(align_backward(messages, reply), head_end + 1)
    if min_tail_user_messages > 1:
        users = [i for i in range(n - 1, head_end - 1, -1) if is_real_user_turn(messages[i])]
        if users:
            target = users[min(min_tail_user_messages, len(users)) - 1]
            if target < cut:
                cut = max(target, head_end + 1)
    return align_forward(messages, max(cut, head_end + 1))


def _anchor_user(messages: list[Message], cut: int, head_end: int, user: int | None) -> int:
    """Upstream ``_ensure_last_user_message_in_tail`` (with the turn-pair push of #22523)."""
    if user is None or user >= cut:
        return cut
    adjusted = max(user, head_end + 1)
    if adjusted > user:
        return max(turn_pair_end(messages, user), head_end + 1)
    return adjusted


def pull_back_to_bridge(messages: list[Message], start: int, end: int) -> int:
    """Upstream ``_compress_window``: when ``end`` lands on the latest actionable user, keep the older
    assistant/tool bridge in the tail instead (the summary may merge into the first tail row)."""
    user = last_real_user(messages, 0)
    if user is None or end != user:
        return end
    bridge = user - 1
    role = messages[bridge].get("role") if bridge >= 0 else None
    if role == "tool":
        bridge = align_backward(messages, user)
    elif role != "assistant":
        bridge = -1
    return bridge if bridge > start else end
