"""A prompt-cache store on the virtual clock (caching.md §8.2).

An entry is readable iff ``ready_at <= t < last_used + ttl``. A read refreshes ``last_used`` to the
start of the reading request (Anthropic A10: the lifetime counts from the request start), a write
creates or refreshes. ``ready_at`` models that an entry exists only once the writer's response has
begun (A13), so parallel requests with the same prefix all miss.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(slots=True)
class Entry:
    """One cached prefix."""

    tokens: int
    written_at: float
    last_used: float
    ttl: float
    ready_at: float

    def readable(self, t: float) -> bool:
        return self.ready_at <= t < self.last_used + self.ttl


class CacheStore:
    """Entries by prefix key, with expiry on the virtual clock.

    Args:
        ttft: Seconds between a request's start and the moment its writes become readable.
        sweep_every: Drop expired entries every this many writes (keeps memory flat on long runs).
    """

    def __init__(self, *, ttft: float = 0.0, sweep_every: int = 512) -> None:
        self.ttft = ttft
        self._entries: dict[bytes, Entry] = {}
        self._sweep_every = sweep_every
        self._writes = 0
        self._latest = float("-inf")

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: bytes) -> bool:
        return key in self._entries

    def readable(self, key: bytes, t: float) -> Entry | None:
        """The entry under ``key`` if it can be read at ``t``, else None (no refresh)."""
        entry = self._entries.get(key)
        if entry is None or not entry.readable(t):
            return None
        return entry

    def touch(self, key: bytes, t: float) -> None:
        """Refresh an entry that was just read."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.last_used = max(entry.last_used, t)

    def write(self, key: bytes, tokens: int, t: float, ttl: float, *, ready_at: float | None = None) -> None:
        """Create or refresh ``key`` at ``t``; a refresh keeps the longer TTL."""
        ready = t + self.ttft if ready_at is None else ready_at
        entry = self._entries.get(key)
        if entry is not None and entry.readable(t):
            entry.last_used = max(entry.last_used, t)
            entry.ttl = max(entry.ttl, ttl)
        else:
            self._entries[key] = Entry(tokens, t, t, ttl, ready)
        self._latest = max(self._latest, t)
        self._writes += 1
        if self._writes % self._sweep_every == 0:
            self.sweep(self._latest)

    def write_prefixes(self, keys: list[bytes], tokens: list[int], t: float, ttl: float) -> None:
        """Store every prefix of one prompt (prefix-matching providers); a bulk :meth:`write`."""
        entries = self._entries
        ready = t + self.ttft
        for key, count in zip(keys, tokens, strict=True):
            entry = entries.get(key)
            if entry is not None and entry.ready_at <= t < entry.last_used + entry.ttl:
                if t > entry.last_used:
                    entry.last_used = t
                if ttl > entry.ttl:
                    entry.ttl = ttl
            else:
                entries[key] = Entry(count, t, t, ttl, ready)
        self._latest = max(self._latest, t)
        before = self._writes
        self._writes += len(keys)
        if self._writes // self._sweep_every != before // self._sweep_every:
            self.sweep(self._latest)

    def sweep(self, t: float) -> int:
        """Drop entries expired at ``t``; returns how many."""
        dead = [k for k, e in self._entries.items() if t >= e.last_used + e.ttl]
        for key in dead:
            del self._entries[key]
        return len(dead)
