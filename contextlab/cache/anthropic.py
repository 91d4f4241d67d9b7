"""Anthropic prompt caching: explicit ``cache_control`` breakpoints (caching.md §1, algorithm §8.3).

Entries exist only where a request placed a breakpoint (A5). On a miss each breakpoint walks back at
most 20 lookback positions, itself included (A6); a run of tool_use (or of tool_result) blocks is one
position, checked at the run's end. Writes happen only at breakpoints at or above the model's minimum
(A9). Mixed TTLs bill 1h writes up to the last 1h breakpoint and 5m writes after it (A11).
"""

from __future__ import annotations

from typing import Any

from contextlab.cache.blocks import RenderedRequest
from contextlab.cache.profiles import CacheProfile, CacheResult, Marker
from contextlab.cache.store import ttl_seconds
from contextlab.errors import ConfigError

MAX_BREAKPOINTS = 4
LOOKBACK_POSITIONS = 20

MIN_CACHEABLE: tuple[tuple[str, int], ...] = (
    # Longest model-name prefix wins (caching.md A9, Claude API; 2026-06 doc + 2026-10 notes).
    ("claude-opus-5-5", 512),
    ("claude-opus-5", 512),
    ("claude-sonnet-5-5", 512),
    ("claude-fable-5", 512),
    ("claude-mythos-5", 512),
    ("claude-haiku-5-5", 512),
    ("claude-opus-4-8", 1024),
    ("claude-sonnet-5", 1024),
    ("claude-sonnet-4-6", 1024),
    ("claude-sonnet-4-5", 1024),
    ("claude-opus-4-1", 1024),
    ("claude-opus-4-0", 1024),
    ("claude-opus-4-2", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-opus-4-7", 2048),
    ("claude-mythos-preview", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-haiku-3-5", 2048),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
)
DEFAULT_MIN_CACHEABLE = 1024


def min_cacheable_tokens(model: str) -> int:
    """The minimum cacheable prefix for ``model`` (longest matching name prefix; default 1024)."""
    name = model.lower().rsplit("/", 1)[-1]
    best = ("", DEFAULT_MIN_CACHEABLE)
    for prefix, value in MIN_CACHEABLE:
        if name.startswith(prefix) and len(prefix) > len(best[0]):
            best = (prefix, value)
    return best[1]


class AnthropicProfile(CacheProfile):
    """Anthropic Messages caching with explicit breakpoints (placed by a policy).

    Options:
        min_tokens: Override the model's minimum cacheable length.
        lookback: Positions checked per breakpoint (default 20).
        collapse_runs: Count a run of tool_use / tool_result blocks as one position (default True).
    """

    provider = "anthropic"
    uses_markers = True
    default_model = "claude-opus-5-5"

    def configure(
        self,
        *,
        min_tokens: int | None = None,
        lookback: int = LOOKBACK_POSITIONS,
        collapse_runs: bool = True,
        **rest: Any,
    ) -> None:
        super().configure(**rest)
        self.min_tokens = int(min_tokens) if min_tokens is not None else min_cacheable_tokens(self.model)
        self.lookback = int(lookback)
        self.collapse_runs = bool(collapse_runs)
        self._image_keys: tuple[list[bytes], int, list[bytes]] | None = None  # source, count, keys

    def validate(self, markers: list[Marker]) -> str | None:
        """The 400 error a real request with these markers would get, else None."""
        if len(markers) > MAX_BREAKPOINTS:
            found = len(markers)
            return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
        seen_5m = False
        for marker in sorted(markers, key=lambda m: m.block):
            if marker.ttl == "5m":
                seen_5m = True
            elif seen_5m and ttl_seconds(marker.ttl) > 300:
                return "a longer-TTL cache_control breakpoint must come before shorter-TTL ones"
        return None

    def _candidates(self, request: RenderedRequest, block: int) -> list[int]:
        """Block indices checked for ``block``'s breakpoint: itself, then earlier positions."""
        found = [block]
        if self.collapse_runs:
            positions = request.positions
            p = request.position_of[block]
            p -= 1  # the breakpoint itself was the first check, even inside a run
            while p >= 0 and len(found) < self.lookback:
                found.append(positions[p])
                p -= 1
        else:
            found.extend(range(block - 1, max(-1, block - self.lookback), -1))
        return found

    def keys(self, request: RenderedRequest) -> list[bytes]:
        """Prefix keys. Images added or removed anywhere invalidate the messages layer (caching.md
        §1.2), so message-section keys carry whether the request has images."""
        source = request.hashes
        if not request.has_images:
            return source
        # Extended in place by the next request (``RenderedRequest``): derive only the new keys.
        cached = self._image_keys
        out = cached[2] if cached is not None and cached[0] is source and cached[1] <= len(source) else []
        blocks = request.blocks
        for i in range(len(out), len(source)):
            out.append(source[i] + b"+images" if blocks[i].section == "messages" else source[i])
        self._image_keys = (source, len(source), out)
        return out

    def simulate(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        total = self.total(request)
        error = self.validate(markers)
        if error is not None:
            raise ConfigError(f"anthropic: {error}")
        cum = self.cum(request)
        hashes = self.keys(request)
        store = self.store
        read, read_key = 0, b""
        for marker in markers:
            candidate = store.first_readable(hashes, self._candidates(request, marker.block), t)
            if candidate >= 0 and cum[candidate] > read:
                read, read_key = cum[candidate], hashes[candidate]
        if read_key:
            store.touch(read_key, t)
        writes = [m for m in markers if cum[m.block] >= self.min_tokens and cum[m.block] > read]
        if not writes:
            return CacheResult(total, read, 0, total - read, {})
        top = max(cum[m.block] for m in writes)
        long_ttl = [cum[m.block] for m in writes if m.ttl != "5m" and read < cum[m.block] <= top]
        boundary = max(long_ttl) if long_ttl else read
        by_ttl: dict[str, int] = {}
        long_label = next((m.ttl for m in writes if m.ttl != "5m"), "1h")
        if boundary > read:
            by_ttl[long_label] = boundary - read
        if top > boundary:
            by_ttl["5m"] = top - boundary
        for marker in writes:
            store.write(hashes[marker.block], cum[marker.block], t, ttl_seconds(marker.ttl))
        write = top - read
        return CacheResult(total, read, write, max(0, total - top), by_ttl)
