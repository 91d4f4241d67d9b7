"""The store's pending prefix refresh behaves exactly like refreshing every entry."""

from __future__ import annotations

import random

from contextlab.cache.store import CacheStore, Entry, common_prefix


class _NaiveStore:
    """The store's rules applied entry by entry (the reference)."""

    def __init__(self, ttft: float) -> None:
        self.ttft = ttft
        self.entries: dict[bytes, Entry] = {}

    def write_prefixes(self, keys: list[bytes], tokens: list[int], t: float, ttl: float) -> None:
        for key, count in zip(keys, tokens, strict=True):
            entry = self.entries.get(key)
            if entry is not None and entry.readable(t):
                last, longest = max(entry.last_used, t), max(entry.ttl, ttl)
                self.entries[key] = Entry(entry.tokens, entry.written_at, last, longest, entry.ready_at)
            else:
                self.entries[key] = Entry(count, t, t, ttl, t + self.ttft)

    def readable(self, key: bytes, t: float) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.readable(t)


def test_pending_refresh_matches_entry_by_entry_refresh() -> None:
    rng = random.Random(11)
    for trial in range(60):
        ttft = rng.choice([0.0, 2.0])
        store, naive = CacheStore(ttft=ttft, sweep_every=8), _NaiveStore(ttft)
        prompt: list[bytes] = []
        t = 0.0
        for step in range(40):
            keep = rng.randint(0, len(prompt))
            prompt = prompt[:keep] + [f"{trial}-{step}-{k}".encode() for k in range(rng.randint(0, 5))]
            t += rng.choice([1.0, 30.0, 400.0])
            ttl = rng.choice([300.0, 300.0, 3600.0])
            for i, key in enumerate(prompt):
                assert store.readable_at(key, i, t) == naive.readable(key, t)
            store.write_prefixes(prompt, list(range(len(prompt))), t, ttl)
            naive.write_prefixes(prompt, list(range(len(prompt))), t, ttl)
        probe = t + rng.choice([1.0, 200.0, 1000.0])
        for key in naive.entries:
            assert (store.readable(key, probe) is not None) == naive.readable(key, probe)


def test_common_prefix_of_cumulative_keys() -> None:
    assert common_prefix([b"a", b"b", b"c"], [b"a", b"b", b"x", b"y"]) == 2
    assert common_prefix([], [b"a"]) == 0
    assert common_prefix([b"a"], [b"a"]) == 1
