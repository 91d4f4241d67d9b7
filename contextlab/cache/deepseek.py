"""DeepSeek context caching on disk (caching.md §4, algorithm §8.3).

A request hits only a whole persisted "cache prefix unit" (D2). Units are written at the end of each
request's input, at the end of its output (usable when the next request replays that output
verbatim), at fixed token intervals, and where a common prefix with an earlier request is detected;
a detected common prefix is readable only by later requests (D3). ``legacy=True`` is the 2024 rule:
the longest common prefix floored to 64-token units (D4).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from contextlab.cache.blocks import RenderedRequest
from contextlab.cache.profiles import CacheProfile, CacheResult, Marker, lcp_result, longest_readable_prefix
from contextlab.cache.store import common_prefix, ttl_seconds
from contextlab.errors import ConfigError

LEGACY_UNIT = 64


class DeepSeekProfile(CacheProfile):
    """DeepSeek disk cache.

    Options:
        interval: Token interval of the fixed units inside long inputs (default 64; unpublished).
        legacy: Use the 2024 64-token-unit prefix rule instead of V4 units.
        ttl: Lifetime since last use (default ``24h``; documented as hours to days, best effort).
        recent: How many earlier requests common prefixes are detected against (default 8).
    """

    provider = "deepseek"
    default_model = "deepseek-flash"

    def configure(
        self,
        *,
        interval: int = LEGACY_UNIT,
        legacy: bool = False,
        ttl: str | float = "24h",
        recent: int = 8,
        **rest: Any,
    ) -> None:
        super().configure(**rest)
        if interval < 1:
            raise ConfigError(f"deepseek: interval must be >= 1, got {interval}")
        self.interval = int(interval)
        self.legacy = bool(legacy)
        self.ttl_s = ttl_seconds(ttl)
        # (prefix keys, how many of them were the request's, request time) of recent requests.
        self._recent: deque[tuple[list[bytes], int, float]] = deque(maxlen=max(1, int(recent)))
        self._units: dict[bytes, int] = {}

    def _unit(self, key: bytes, tokens: int, t: float, ready_at: float | None = None) -> None:
        if tokens <= 0:
            return
        self._units[key] = max(tokens, self._units.get(key, 0))
        self.store.write(key, tokens, t, self.ttl_s, ready_at=ready_at)

    def simulate(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        total = self.total(request)
        cum = self.cum(request)
        hashes = request.hashes
        if self.legacy:
            return self._legacy(request, cum, total, t)
        previous = self._recent[-1] if self._recent else None
        if previous is not None:
            # The previous output becomes a unit if this request replays it right after its input.
            old, size, at = previous
            end = size - 1
            # An assistant block is a message block, so message_of names its row.
            if 0 <= end < len(hashes) - 1 and hashes[end] == old[end] and request.blocks[end + 1].role == "assistant":
                stop = request.message_ends[request.message_of(end + 1)]
                self._unit(hashes[stop], cum[stop], at)
        # The last readable unit along the request is the longest: a full unit holds its whole
        # prefix, and an interval unit at block i holds more than any prefix ending before i.
        hit = 0
        for key in reversed(hashes):
            tokens = self._units.get(key)
            if tokens is not None and self.store.readable(key, t) is not None:
                hit = tokens
                self.store.touch(key, t)
                break
        # Units this request persists (readable by later requests only).
        self._unit(hashes[-1], cum[-1], t)
        common = []
        for old, size, _ in self._recent:
            shared = common_prefix(old, hashes, size)
            common.append(shared)
            if shared:
                self._unit(hashes[shared - 1], cum[shared - 1], t, ready_at=t + max(self.ttft, 1e-9))
        # Interval units: the ones inside the prefix shared with the previous request already exist,
        # so only the new tail adds units.
        k = self.interval
        start = max(0, common[-1] - 1) if common else 0
        for i in range(start, len(cum)):
            if cum[i] // k > (cum[i - 1] if i else 0) // k:
                self._unit(hashes[i], (cum[i] // k) * k, t)
        self._recent.append((hashes, len(hashes), t))
        return lcp_result(total, hit)

    def _legacy(self, request: RenderedRequest, cum: list[int], total: int, t: float) -> CacheResult:
        last = longest_readable_prefix(self.store, request, t)
        common = cum[last] if last >= 0 else 0
        self.store.write_prefixes(request.hashes, cum, t, self.ttl_s)
        return lcp_result(total, (common // LEGACY_UNIT) * LEGACY_UNIT)
