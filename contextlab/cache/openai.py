"""OpenAI prompt caching (caching.md §2).

Models up to GPT-5.5 cache automatically: the longest common prefix with a stored prompt, from
1,024 tokens, in 128-token steps, free writes (O1-O5). GPT-5.6 and later cache at breakpoints: an
implicit one at the end of the latest message plus explicit markers, exact match only, no
lookback limit but only the latest 50 written breakpoints are readable, up to 4 new writes per
request billed at 1.25x (30 min) (O6-O13).
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from contextlab.cache.blocks import RenderedRequest
from contextlab.cache.profiles import CacheProfile, CacheResult, Marker, lcp_result, longest_readable_prefix
from contextlab.cache.store import ttl_seconds
from contextlab.errors import ConfigError

MIN_PREFIX = 1024
STEP = 128
READ_WINDOW = 50
MAX_NEW_WRITES = 4
_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?")


def uses_breakpoints(model: str) -> bool:
    """True for GPT-5.6 and later (breakpoint caching with billed writes)."""
    match = _VERSION.search(model.lower())
    if match is None:
        return False
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return (major, minor) >= (5, 6)


def rounded_hit(common: int, total: int) -> int:
    """Cached tokens for a common prefix of ``common`` tokens: 0 under 1,024, else 1,024 + 128·k,
    capped at the request rounded down to 128 (O2: a 2,006-token prompt caches at most 1,920)."""
    if total < MIN_PREFIX or common < MIN_PREFIX:
        return 0
    hit = MIN_PREFIX + STEP * ((common - MIN_PREFIX) // STEP)
    return min(hit, (total // STEP) * STEP)


class OpenAIProfile(CacheProfile):
    """OpenAI caching; the mode follows the model unless ``mode`` is given.

    Options:
        mode: ``auto`` (by model), ``prefix`` (implicit, ≤ GPT-5.5) or ``breakpoints`` (≥ GPT-5.6).
        retention: Prefix mode: ``in_memory`` (idle TTL ``idle_ttl``, default 10 min) or ``24h``.
        idle_ttl: Prefix mode in-memory idle lifetime (seconds or a label such as ``5m``).
        ttl: Breakpoint mode write TTL: ``30m`` (1.25x) or ``12h``.
        explicit_only: Breakpoint mode ``explicit``: no implicit breakpoint on the latest message.
    """

    provider = "openai"
    default_model = "gpt-6.2-sol"

    def configure(
        self,
        *,
        mode: str = "auto",
        retention: str | None = None,
        idle_ttl: str | float = "10m",
        ttl: str = "30m",
        explicit_only: bool = False,
        **rest: Any,
    ) -> None:
        super().configure(**rest)
        if mode not in ("auto", "prefix", "breakpoints"):
            raise ConfigError(f"openai: mode must be auto, prefix or breakpoints, got {mode!r}")
        self.breakpoints = uses_breakpoints(self.model) if mode == "auto" else mode == "breakpoints"
        if retention is None:
            # gpt-5.5 supports only 24h retention; older models default to 24h unless ZDR (O4).
            retention = "24h" if re.search(r"gpt-(5\.[1-5]|5$|5-|4\.1)", self.model) else "in_memory"
        if retention not in ("in_memory", "24h"):
            raise ConfigError(f"openai: retention must be in_memory or 24h, got {retention!r}")
        self.retention_s = ttl_seconds("24h") if retention == "24h" else ttl_seconds(idle_ttl)
        self.ttl = ttl
        self.explicit_only = bool(explicit_only)
        self._recent: deque[tuple[bytes, int]] = deque(maxlen=READ_WINDOW)

    @property
    def uses_markers(self) -> bool:  # type: ignore[override]
        return self.breakpoints

    def simulate(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        if self.breakpoints:
            return self._breakpoints(request, markers, t)
        total = self.total(request)
        cum = self.cum(request)
        last = longest_readable_prefix(self.store, request, t)
        common = cum[last] if last >= 0 else 0
        # The whole prompt is stored; every block boundary becomes a readable prefix.
        self.store.write_prefixes(request.hashes, cum, t, self.retention_s)
        return lcp_result(total, rounded_hit(common, total))

    def _breakpoints(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        total = self.total(request)
        cum = self.cum(request)
        hashes = request.hashes
        read, read_key = 0, b""
        # A key is a cumulative hash: it can only sit at the block index it was written at.
        for key, i in self._recent:
            if i < len(hashes) and hashes[i] == key and cum[i] > read and self.store.readable(key, t) is not None:
                read, read_key = cum[i], key
        if read_key:
            self.store.touch(read_key, t)
        explicit = sorted({m.block for m in markers if request.blocks[m.block].section == "messages"})
        planned = explicit[-MAX_NEW_WRITES:] if self.explicit_only else explicit[-(MAX_NEW_WRITES - 1) :]
        if not self.explicit_only and request.message_ends:
            planned = sorted({*planned, request.message_ends[-1]})
        writes = [b for b in planned if cum[b] >= MIN_PREFIX and cum[b] > read]
        top = max((cum[b] for b in writes), default=read)
        for b in writes:
            self.store.write(hashes[b], cum[b], t, ttl_seconds(self.ttl))
            if (hashes[b], b) in self._recent:
                self._recent.remove((hashes[b], b))
            self._recent.append((hashes[b], b))
        write = top - read
        return CacheResult(total, read, write, total - top, {self.ttl: write} if write else {})
