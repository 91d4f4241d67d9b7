"""Where the compressor cuts: the protected head, the compressed middle and the protected tail
(``host-contract.md`` §2d steps 1 and 3).

``compress_start`` and ``compress_end`` delimit the middle ``messages[start:end]``. Every cut
lands on a safe index: never between an assistant's ``tool_calls`` and their results, never
leaving a leading tool row, and never dropping the newest real user turn.
"""

from __future__ import annotations

from contextlab.engine import Message
from contextlab.engines.compressor.assembly import is_actionable_user, is_handoff
from contextlab.engines.compressor.budgets import message_budget_tokens
from contextlab.messages import content_text, tool_calls

MIN_TAIL_FLOOR = 3
MIN_TAIL_CAP = 8
SOFT_CEILING = 1.5
HEAD_SCAN_EXTRA = 4


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


def last_real_user(messages: list[Message]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if is_actionable_user(messages[i]):
            return i
    return None


def _last_assistant_reply(messages: list[Message]) -> int | None:
    """The newest assistant message with user-visible text (not a pure tool-call row)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if (
            message.get("role") == "assistant"
            and content_text(message).strip()
            and not tool_calls(message)
            and not is_handoff(message)
        ):
            return i
    return None


def _group_end(messages: list[Message], index: int) -> int:
    """Index just past the assistant reply (and its tool results) that follows ``index``."""
    j = index + 1
    if j < len(messages) and messages[j].get("role") == "assistant":
        j += 1
        while j < len(messages) and messages[j].get("role") == "tool":
            j += 1
    return j


def min_tail(available: int, protect_last_n: int) -> int:
    """``min(max(3, min(protect_last_n, 8)), max(3, available − 2), available)``; 0 if available ≤ 1."""
    if available <= 1:
        return 0
    return min(max(MIN_TAIL_FLOOR, min(protect_last_n, MIN_TAIL_CAP)), max(MIN_TAIL_FLOOR, available - 2), available)


def tail_cut_by_tokens(
    messages: list[Message],
    head_end: int,
    budget: int,
    *,
    protect_last_n: int,
    min_tail_user_messages: int = 1,
    costs: list[int] | None = None,
) -> int:
    """``compress_end``: the first tail index, cut by token budget with the host's guarantees.

    Args:
        messages: The (pruned) history.
        head_end: ``compress_start``; the middle is at least one message long when possible.
        budget: The tail token budget; the walk may go up to 1.5 × budget (soft ceiling).
        protect_last_n: Drives the minimum tail size.
        min_tail_user_messages: Keep at least this many real user messages in the tail.
        costs: Precomputed per-message budget tokens (computed when omitted).
    """
    n = len(messages)
    if costs is None:
        costs = [message_budget_tokens(m) for m in messages]
    available = n - head_end - 1
    floor = min_tail(available, protect_last_n)

    def walk(limit: float) -> tuple[int, bool]:
        acc = 0
        cut = n
        for i in range(n - 1, head_end, -1):
            kept = n - cut
            if kept >= floor and acc + costs[i] > limit:
                return cut, False
            acc += costs[i]
            cut = i
        return cut, True

    cut, everything_fit = walk(SOFT_CEILING * budget)
    if everything_fit:
        cut, _ = walk(budget)
    cut = min(cut, n - floor)
    cut = min(max(cut, head_end + 1), n)
    cut = align_backward(messages, cut)

    user = last_real_user(messages)
    if user is not None and user < cut:
        # When the last ask sits at the head boundary the clamp would split it from its reply:
        # push the cut past the ask and its assistant + tools instead.
        cut = user if user > head_end else max(cut, min(_group_end(messages, user), n))
    reply = _last_assistant_reply(messages)
    if reply is not None and head_end < reply < cut:
        cut = reply
    if min_tail_user_messages > 1:
        users = [i for i in range(n) if is_actionable_user(messages[i]) and i > head_end]
        wanted = users[-min_tail_user_messages:]
        if wanted and wanted[0] < cut:
            cut = wanted[0]
    return align_forward(messages, cut)


def pull_back_to_bridge(messages: list[Message], start: int, end: int) -> int:
    """If ``end`` lands exactly on the latest actionable user, include the assistant/tool bridge
    before it in the tail (when the middle stays non-empty)."""
    user = last_real_user(messages)
    if user is None or end != user or end - 1 <= start:
        return end
    previous = messages[end - 1].get("role")
    if previous not in ("assistant", "tool"):
        return end
    j = end - 1
    while j > start and messages[j].get("role") == "tool":
        j -= 1
    if messages[j].get("role") == "assistant" and j > start:
        return j
    return end
