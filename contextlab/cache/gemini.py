"""Gemini implicit caching (caching.md §3): an automatic common prefix, best effort, no write fee.

The minimum depends on the model (G2); granularity is undocumented (the recorded Gemini 3 Pro runs
in ``mini-swe-agent`` show hits just under multiples of 2,048 tokens, so a granularity option is
offered); hits are not guaranteed (G1, G7), modelled by a deterministic ``hit_prob`` draw.
"""

from __future__ import annotations

from typing import Any

from contextlab.cache.blocks import RenderedRequest
from contextlab.cache.profiles import CacheProfile, CacheResult, Marker, lcp_result, longest_readable_prefix
from contextlab.cache.store import ttl_seconds
from contextlab.errors import ConfigError

MIN_IMPLICIT: tuple[tuple[str, int], ...] = (
    # G2, doc updated 2026-10-13 (longest name prefix wins).
    ("gemini-4", 4096),
    ("gemini-3.8", 4096),
    ("gemini-3.6", 4096),
    ("gemini-3.5", 4096),
    ("gemini-3.1-pro", 4096),
    ("gemini-3-pro", 4096),
    ("gemini-3-flash", 1024),
    ("gemini-2.5-flash", 2048),
    ("gemini-2.5-pro", 2048),
)
DEFAULT_MIN = 4096

GRANULARITY: tuple[tuple[str, int], ...] = (
    # Undocumented. The recorded Gemini 3 Pro runs (mini-swe-agent, via OpenRouter) show cached
    # counts sitting just under multiples of 2,048 tokens (4058, 6081, 8141, 10169, ...).
    ("gemini-3-pro", 2048),
)


def _by_prefix(table: tuple[tuple[str, int], ...], model: str, default: int) -> int:
    name = model.lower().rsplit("/", 1)[-1]
    best = ("", default)
    for prefix, value in table:
        if name.startswith(prefix) and len(prefix) > len(best[0]):
            best = (prefix, value)
    return best[1]


def min_implicit_tokens(model: str) -> int:
    """Implicit-cache minimum for ``model`` (longest name prefix; default 4,096)."""
    return _by_prefix(MIN_IMPLICIT, model, DEFAULT_MIN)


class GeminiProfile(CacheProfile):
    """Gemini implicit caching.

    Options:
        min_tokens: Override the model minimum.
        granularity: Round hits down to a multiple of this many tokens (default: 2,048 for Gemini 3
            Pro, as observed in recorded usage; else 1, no rounding).
        hit_prob: Probability that an available prefix is actually served from cache (default 1.0).
        ttl: Lifetime of a stored prefix since last use (default ``1h``; undocumented, Vertex ≤ 24 h).
    """

    provider = "gemini"
    default_model = "gemini-3.6-flash"

    def configure(
        self,
        *,
        min_tokens: int | None = None,
        granularity: int | None = None,
        hit_prob: float = 1.0,
        ttl: str | float = "1h",
        **rest: Any,
    ) -> None:
        super().configure(**rest)
        if not 0.0 <= hit_prob <= 1.0:
            raise ConfigError(f"gemini: hit_prob must be in [0, 1], got {hit_prob}")
        if granularity is None:
            granularity = _by_prefix(GRANULARITY, self.model, 1)
        if granularity < 1:
            raise ConfigError(f"gemini: granularity must be >= 1, got {granularity}")
        self.min_tokens = int(min_tokens) if min_tokens is not None else min_implicit_tokens(self.model)
        self.granularity = int(granularity)
        self.hit_prob = float(hit_prob)
        self.ttl_s = ttl_seconds(ttl)
        self._count = 0

    def simulate(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        total = self.total(request)
        cum = self.cum(request)
        last = longest_readable_prefix(self.store, request, t)
        common = cum[last] if last >= 0 else 0
        hit = (common // self.granularity) * self.granularity
        # The draw is keyed by the request's content too, so different sessions miss at different places.
        if hit < self.min_tokens or (
            self.hit_prob < 1.0
            and self.draw(self._count, request.hashes[-1] if request.hashes else b"") >= self.hit_prob
        ):
            hit = 0
        self._count += 1
        self.store.write_prefixes(request.hashes, cum, t, self.ttl_s)
        return lcp_result(total, hit)
