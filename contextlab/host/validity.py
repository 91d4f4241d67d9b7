"""What makes an engine's message list unusable, for ``select_context`` and for compaction passes.

The host accepts a ``select_context`` result only when it is a non-empty list of dicts; contextlab
also refuses lists whose rows lack a ``role`` or that leave no user message when the request had
one (a provider rejects both; scoring them would let broken output win a benchmark). A compaction
result with such rows is ``invalid`` and is never committed. See ``docs/host-loop.md`` §Malformed
results.
"""

from __future__ import annotations

from contextlab.engine import Message


def row_problem(rows: list[Message]) -> str | None:
    """Why ``rows`` (already known to be dicts) is not a usable message list, or None."""
    if not rows:
        return "empty list"
    for i, row in enumerate(rows):
        role = row.get("role")
        if not isinstance(role, str) or not role:
            return f"row {i} has no role"
    return None


def selection_problem(result: list[Message], *, needs_user: bool) -> str | None:
    """Why a ``select_context`` list of dicts is refused, or None. ``needs_user``: the request
    the host built holds a user message, so the selection must keep one."""
    problem = row_problem(result)
    if problem is not None:
        return problem
    if needs_user and not any(row.get("role") == "user" for row in result):
        return "no user message left"
    return None
