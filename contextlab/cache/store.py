"""A prompt-cache store on the virtual clock (caching.md §8.2).

An entry is readable iff ``ready_at <= t < last_used + ttl``. A read refreshes ``last_used`` to the
start of the reading request (Anthropic A10: the lifetime counts from the request start), a write
creates or refreshes. ``ready_at`` models that an entry exists only once the writer's response has
begun (A13), so parallel requests with the same prefix all miss.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import NamedTuple

TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0, "30m": 1800.0, "12h": 43200.0, "24h": 86400.0}


def ttl_seconds(ttl: str | float) -> float:
    """Seconds for a TTL label (``5m``, ``1h``, ``30m``, ``12h``, ``24h``) or a number of seconds."""
    if isinstance(ttl, (int, float)):
        return float(ttl)
    if ttl in TTL_SECONDS:
        return TTL_SECONDS[ttl]
    unit = ttl[-1:]
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}.get(unit)
    if scale is None:
        from contextlab.errors import ConfigError

        raise ConfigError(f"unknown cache TTL {ttl!r}; expected e.g. 5m, 1h, 30m, 24h")
    return float(ttl[:-1]) * scale


class Entry(NamedTuple):
    """One cached prefix. Immutable (a refresh stores a new entry): a tuple of plain numbers is not
    tracked by the garbage collector, and a long replay's stores hold one entry per prefix."""

    tokens: int
    written_at: float
    last_used: float
    ttl: float
    ready_at: float

    def readable(self, t: float) -> bool:
        return self.ready_at <= t < self.last_used + self.ttl


def common_prefix(a: list[bytes], b: list[bytes], a_size: int | None = None, b_size: int | None = None) -> int:
    """How many leading prefix keys two requests share (of their first ``a_size`` / ``b_size`` keys:
    a renderer may have extended a kept list since, see ``RenderedRequest``).

    A key is a cumulative hash (it names the whole prefix up to its block), so ``a[i] == b[i]``
    implies every earlier key is shared too: the length is found by bisection.
    """
    low = 0
    high = min(len(a) if a_size is None else a_size, len(b) if b_size is None else b_size)
    if high and a[high - 1] == b[high - 1]:
        return high  # one request extends the other (an appended turn): no bisection
    while low < high:
        middle = (low + high) // 2
        if a[middle] == b[middle]:
            low = middle + 1
        else:
            high = middle
    return low


class CacheStore:
    """Entries by prefix key, with expiry on the virtual clock.

    Prefix-matching providers refresh every prefix of every prompt (:meth:`write_prefixes`). Done
    entry by entry that is O(request) per request; instead the refresh of the prompt's keys is kept
    *pending* (``docs/performance.md``): the next prompt, which shares most of them, takes the shared
    keys over into its own pending refresh, and only the keys it does not share are brought up to
    date. Readability along a prompt (:meth:`readable_at`) takes the pending refresh into account;
    every other method applies it first, so the store always behaves as if each entry were updated.

    Args:
        ttft: Seconds between a request's start and the moment its writes become readable.
        sweep_every: Drop expired entries at least this many writes apart (and then only once the
            writes since the last sweep reach the store's size, so sweeping is O(1) per write).
    """

    def __init__(self, *, ttft: float = 0.0, sweep_every: int = 512) -> None:
        self.ttft = ttft
        self._entries: dict[bytes, Entry] = {}
        self._sweep_every = sweep_every
        self._writes = 0
        self._size_after_sweep = 0
        self._latest = float("-inf")
        # The first ``size`` keys of a prompt, refreshed at ``t`` with ``ttl``: (keys, size, t, ttl).
        self._pending: tuple[list[bytes], int, float, float] | None = None
        self._settled = True  # the pending refresh is applied to every entry

    def __len__(self) -> int:
        self._settle()
        return len(self._entries)

    def __contains__(self, key: bytes) -> bool:
        self._settle()
        return key in self._entries

    def _settle(self, keys: list[bytes] | None = None) -> None:
        """Apply the pending refresh to every key (or only to ``keys``). Applying it is idempotent,
        so the refresh stays pending for :meth:`write_prefixes` to extend."""
        pending = self._pending
        if pending is None or (keys is None and self._settled):
            return
        entries, at = self._entries, pending[2]
        for key in islice(pending[0], pending[1]) if keys is None else keys:
            entry = entries.get(key)
            if entry is not None and entry.last_used < at:
                entries[key] = Entry(entry.tokens, entry.written_at, at, entry.ttl, entry.ready_at)
        if keys is None:
            self._settled = True

    def readable(self, key: bytes, t: float) -> Entry | None:
        """The entry under ``key`` if it can be read at ``t``, else None (no refresh)."""
        self._settle()
        entry = self._entries.get(key)
        if entry is None or not entry.readable(t):
            return None
        return entry

    def first_readable(self, keys: Sequence[bytes], at: Iterable[int], t: float) -> int:
        """The first of the block indices ``at`` whose key in ``keys`` can be read at ``t`` (-1:
        none); :meth:`readable` of each in turn, with the pending refresh applied once."""
        self._settle()
        get = self._entries.get
        for i in at:
            entry = get(keys[i])
            if entry is not None and entry.ready_at <= t < entry.last_used + entry.ttl:
                return i
        return -1

    def readable_at(self, key: bytes, index: int, t: float) -> bool:
        """Whether ``key``, the prefix key of block ``index`` of a prompt, can be read at ``t``."""
        entry = self._entries.get(key)
        if entry is None:
            return False
        last = entry.last_used
        pending = self._pending
        if pending is not None and pending[2] > last and index < pending[1] and pending[0][index] == key:
            last = pending[2]
        return entry.ready_at <= t < last + entry.ttl

    def touch(self, key: bytes, t: float) -> None:
        """Refresh an entry that was just read."""
        self._settle()
        entry = self._entries.get(key)
        if entry is not None and t > entry.last_used:
            self._entries[key] = Entry(entry.tokens, entry.written_at, t, entry.ttl, entry.ready_at)

    def write(self, key: bytes, tokens: int, t: float, ttl: float, *, ready_at: float | None = None) -> None:
        """Create or refresh ``key`` at ``t``; a refresh keeps the longer TTL."""
        self._settle()
        ready = t + self.ttft if ready_at is None else ready_at
        entry = self._entries.get(key)
        if entry is not None and entry.readable(t):
            if t > entry.last_used or ttl > entry.ttl:
                last, longest = max(entry.last_used, t), max(entry.ttl, ttl)
                self._entries[key] = Entry(entry.tokens, entry.written_at, last, longest, entry.ready_at)
        else:
            self._entries[key] = Entry(tokens, t, t, ttl, ready)
        self._latest = max(self._latest, t)
        self._count_writes(1)

    def write_prefixes(self, keys: list[bytes], tokens: list[int], t: float, ttl: float) -> None:
        """Store every prefix of one prompt (prefix-matching providers); a bulk :meth:`write`.

        Keys shared with the previous prompt whose entries are certainly readable at ``t`` (the
        previous prompt refreshed them with this TTL, at most a TTL ago) join the pending refresh
        without being touched; the rest are written one by one.
        """
        entries = self._entries
        start = 0
        pending = self._pending
        if pending is not None:
            old, size, at, old_ttl = pending
            shared = common_prefix(old, keys, size)
            # Every shared entry was refreshed at ``at`` with at least this TTL: readable now.
            if shared and old_ttl == ttl and at + self.ttft <= t < at + ttl:
                if not self._settled:
                    self._settle(old[shared:size])  # the previous prompt's own tail keeps its refresh
                start = shared
            else:
                self._settle()
        ready = t + self.ttft
        for key, count in zip(keys[start:], tokens[start:], strict=True):
            entry = entries.get(key)
            if entry is not None and entry.ready_at <= t < entry.last_used + entry.ttl:
                if t > entry.last_used or ttl > entry.ttl:
                    last, longest = max(entry.last_used, t), max(entry.ttl, ttl)
                    entries[key] = Entry(entry.tokens, entry.written_at, last, longest, entry.ready_at)
            else:
                entries[key] = Entry(count, t, t, ttl, ready)
        self._pending = (keys, len(keys), t, ttl)
        self._settled = False
        self._latest = max(self._latest, t)
        self._count_writes(len(keys) - start)

    def _count_writes(self, n: int) -> None:
        self._writes += n
        if self._writes >= max(self._sweep_every, self._size_after_sweep):
            self.sweep(self._latest)

    def sweep(self, t: float) -> int:
        """Drop entries expired at ``t``; returns how many."""
        self._settle()
        dead = [k for k, e in self._entries.items() if t >= e.last_used + e.ttl]
        for key in dead:
            del self._entries[key]
        self._writes = 0
        self._size_after_sweep = len(self._entries)
        return len(dead)
