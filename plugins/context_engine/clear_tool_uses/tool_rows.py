"""The tool rows of a history, kept from one call to the next (``docs/performance.md``).

``clear_tool_uses`` is asked to prune after every tool step. Above its trigger it lists the
clearable rows: every tool row, its tool's name (from the nearest assistant row before it) and
whether it is already cleared. Scanning the whole history for that on every call made each call
cost the history's length, and the calls that find too little to clear (most of them, once the old
results are cleared) repeat the same scan. The scan is a left-to-right pass with a little state, so
it carries over while the previous call's rows come first again, equal to shallow copies of them
taken then: one C-level comparison per row, whose values are mostly the very same strings (a host
that passes fresh copies pays the same; a row whose content was replaced in place no longer
matches, and the scan starts over).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contextlab.engines import parts

Message = dict[str, Any]


class ToolRows:
    """Tool rows of the latest ``messages`` seen: positions, tool names and cleared flags."""

    def __init__(self, is_cleared: Callable[[Message], bool]) -> None:
        self._is_cleared = is_cleared
        self._reset()

    def _reset(self) -> None:
        self._rows: list[Message] = []
        self._open_calls: dict[str, str] = {}  # call id -> tool name, of the latest assistant row
        self.positions: list[int] = []
        """Positions of the tool rows, oldest first."""
        self.names: list[str] = []
        """Each tool row's tool name ('' when no call before it has its id)."""
        self.cleared: list[bool] = []
        """Whether each tool row is already cleared."""

    def update(self, messages: Sequence[Message]) -> None:
        """Describe ``messages``: only the rows after the previous call's (when those come first
        again, equal) are scanned."""
        known = len(self._rows)
        if known > len(messages) or self._rows != messages[:known]:  # C-level
            self._reset()
            known = 0
        for i in range(known, len(messages)):
            message = messages[i]
            role = message.get("role")
            if role == "assistant":
                self._open_calls = {str(c.get("id") or ""): parts.tool_call_name(c) for c in parts.tool_calls(message)}
            elif role == "tool":
                self.positions.append(i)
                self.names.append(self._open_calls.get(str(message.get("tool_call_id") or ""), ""))
                self.cleared.append(self._is_cleared(message))
        # Shallow copies: a row edited in place (its content replaced) then no longer equals its copy.
        self._rows += map(dict, messages[known:])
