"""The older turn groups of a growing request, kept in step with it from one request to the next.

A group starts at the head's end or at a safe row (not a tool result). It takes the rows up to the
next safe row, and more of them while its estimate is under ``min_cost``: a group closes at the
first safe row at which it has reached ``min_cost`` tokens. The rows after the last closed group
(fewer than ``min_cost`` tokens) are not a group yet; the caller keeps them with its recent block,
so a group's bounds never change once it exists. While requests extend each other (same row
objects, the same head, a recent block that only moves forward), the groups already known keep
their bounds, keys and costs, so a request costs its new groups only. Anything else starts a new
*epoch*: the table is rebuilt from scratch, and callers that keep per-group state by index check
the epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from typing import Any

import numpy as np

Message = dict[str, Any]


class GroupTable:
    """Bounds, keys and costs of the groups in ``[head, recent)``, extended as ``recent`` moves on."""

    def __init__(self) -> None:
        self.epoch = 0
        self.rows = -1
        self.min_cost = 0
        self._clear(-1)

    def _clear(self, head: int) -> None:
        # New lists (never cleared in place): a caller may still hold the previous epoch's keys.
        self.epoch += 1
        self.head = head
        self.end = head  # where the last group ends: the caller's recent block starts here
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.keys: list[str] = []
        self.costs: list[int] = []
        # Whether a group's first / last row is a user message (where a gap marker may go).
        self.opens_with_user: list[bool] = []
        self.closes_with_user: list[bool] = []
        self.unique = True  # no two groups share a key
        self._key_set: set[str] = set()
        self._cost_array: Any = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.starts)

    def update(
        self,
        messages: list[Message],
        cum: list[int],
        safe: list[bool],
        head: int,
        recent: int,
        *,
        rows: int,
        key_of: Callable[[list[Message], int, int], str],
        min_cost: int = 0,
    ) -> None:
        """Bring the table to the closed groups of ``messages[head:recent]``; ``end`` is then where
        the last one ends (``recent`` when ``min_cost`` is 0).

        ``rows`` names the caller's row state (``cum``, ``safe``): it changes whenever the rows are
        no longer the ones seen before (then the table starts a new epoch). ``safe[i]`` tells
        whether row ``i`` may start a group; ``cum[i]`` is the estimate of ``messages[:i]``;
        ``recent`` is a safe row or the end of the list.
        """
        if rows != self.rows or head != self.head or recent < self.end or min_cost != self.min_cost:
            self.rows, self.min_cost = rows, min_cost
            self._clear(head)
        if recent <= self.end:  # no new group (or none at all: the recent block reaches the head)
            return
        if self.starts and not safe[self.end]:
            # The last group would grow (its end was the end of the list, now followed by tool
            # results): its bounds change, so rebuild (never seen with a host that extends requests).
            self._clear(head)
        # The rows from the end of the last group on: the safe rows among them are where a group
        # may close, and a group closes at the first of them at which it holds ``min_cost``.
        lo = self.end
        cuts = [*compress(range(lo + 1, recent), safe[lo + 1 : recent]), recent]
        fresh: list[int] = []
        ends: list[int] = []
        start = lo
        for cut in cuts:
            if cum[cut] - cum[start] >= min_cost:
                fresh.append(start)
                ends.append(cut)
                start = cut
        if not fresh:
            return
        keys = [key_of(messages, s, e) for s, e in zip(fresh, ends, strict=True)]
        costs = [cum[e] - cum[s] for s, e in zip(fresh, ends, strict=True)]
        if self.unique:
            seen = self._key_set
            for key in keys:
                if key in seen:
                    self.unique = False
                    break
                seen.add(key)
        self.starts += fresh
        self.ends += ends
        self.keys += keys
        self.costs += costs
        self.opens_with_user += [messages[i].get("role") == "user" for i in fresh]
        self.closes_with_user += [messages[i - 1].get("role") == "user" for i in ends]
        self.end = start

    def cost_array(self) -> Any:
        """The groups' costs as an int64 array (extended by the new groups only)."""
        known = len(self._cost_array)
        if known != len(self.costs):
            self._cost_array = np.concatenate((self._cost_array, np.array(self.costs[known:], dtype=np.int64)))
        return self._cost_array
