"""What makes an engine's message list unusable, for ``select_context`` and for compaction passes.

The host accepts a ``select_context`` result only when it is a non-empty list of dicts; contextlab
also refuses lists whose rows lack a ``role`` or that leave no user message when the request had
one (a provider rejects both; scoring them would let broken output win a benchmark). A compaction
result with such rows is ``invalid`` and is never committed. See ``docs/host-loop.md`` §Malformed
results.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

from contextlab.engine import Message


def _roles(rows: list[Message]) -> list[Any]:
    """Each row's ``role`` (one C-level pass: the host checks every returned row per request). The
    stored key is read (``dict.get``), as the wire form reads it."""
    return list(map(dict.get, rows, repeat("role")))


def _role_problem(roles: list[Any]) -> str | None:
    if all(map(isinstance, roles, repeat(str))) and all(roles):
        return None
    bad = next(i for i, role in enumerate(roles) if not isinstance(role, str) or not role)
    return f"row {bad} has no role"


def row_problem(rows: list[Message]) -> str | None:
    """Why ``rows`` (already known to be dicts) is not a usable message list, or None."""
    if not rows:
        return "empty list"
    return _role_problem(_roles(rows))


def selection_problem(result: list[Message], *, needs_user: bool) -> str | None:
    """Why a ``select_context`` list of dicts is refused, or None. ``needs_user``: the request
    the host built holds a user message, so the selection must keep one."""
    if not result:
        return "empty list"
    roles = _roles(result)
    problem = _role_problem(roles)
    if problem is not None:
        return problem
    if needs_user and "user" not in roles:  # every role is a str here: ``in`` compares as ``==``
        return "no user message left"
    return None
