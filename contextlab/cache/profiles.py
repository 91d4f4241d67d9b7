"""The provider-profile interface, shared helpers, and ``make_profile`` (name → profile)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from contextlab.cache.blocks import RenderedRequest
from contextlab.cache.store import CacheStore
from contextlab.errors import ConfigError
from contextlab.registry import Registry, mapping_of_targets, subclass_of


@dataclass(frozen=True, slots=True)
class Marker:
    """A cache breakpoint on block ``block`` with TTL ``ttl`` (``5m``, ``1h``, ``30m``, ``12h``)."""

    block: int
    ttl: str = "5m"


@dataclass(frozen=True)
class CacheResult:
    """What a provider would bill for one request's input.

    ``total = read + write + uncached``. ``write_by_ttl`` splits ``write`` by TTL tier.
    """

    total: int
    read: int
    write: int
    uncached: int
    write_by_ttl: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def hit_rate(self) -> float:
        return self.read / self.total if self.total else 0.0


def lcp_result(total: int, read: int, write_ttl: str | None = None, write: int = 0) -> CacheResult:
    """A result for providers that bill no writes (or bill ``write`` at one TTL)."""
    read = max(0, min(read, total))
    write = max(0, min(write, total - read))
    return CacheResult(total, read, write, total - read - write, {write_ttl: write} if write_ttl and write else {})


class CacheProfile(ABC):
    """One provider's cache rules with its own store. Not thread-safe; one instance per replay.

    Args:
        model: Model name (decides minimums, multipliers and the price row).
        token_scale: Provider tokens per counted token (a tokenizer calibration; the unseen
            fixed prefix is not scaled, it is already in provider tokens).
        ttft: Seconds before a write becomes readable (parallel requests miss, A13).
        seed: Seeds the best-effort hit draws (Gemini ``hit_prob``), for determinism.
    """

    provider: ClassVar[str] = ""
    uses_markers: ClassVar[bool] = False
    default_model: ClassVar[str] = ""

    def __init__(
        self,
        model: str | None = None,
        *,
        token_scale: float = 1.0,
        ttft: float = 0.0,
        seed: int = 0,
        **options: Any,
    ) -> None:
        if token_scale <= 0:
            raise ConfigError(f"{self.provider}: token_scale must be positive, got {token_scale}")
        self.model = model or self.default_model
        self.token_scale = float(token_scale)
        self.ttft = float(ttft)
        self.seed = int(seed)
        self.options = dict(options)
        self.store = CacheStore(ttft=self.ttft)
        self._scaled: tuple[list[int], int, int, list[int]] | None = None  # source, count, overhead, scaled
        self.configure(**options)

    def configure(self, **options: Any) -> None:
        """Profile-specific options; unknown ones are an error."""
        if options:
            raise ConfigError(f"{self.provider}: unknown option(s) {', '.join(sorted(options))}")

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    def clone(self) -> CacheProfile:
        """A fresh profile with the same configuration and an empty store."""
        return type(self)(self.model, token_scale=self.token_scale, ttft=self.ttft, seed=self.seed, **self.options)

    @abstractmethod
    def simulate(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        """Read/write/uncached tokens for ``request`` started at ``t``; updates the store."""

    # ------------------------------------------------------------------ helpers

    def cum(self, request: RenderedRequest) -> list[int]:
        """Cumulative provider tokens per block (scaled; the unseen prefix kept as is)."""
        source = request.cum_tokens
        if self.token_scale == 1.0:
            return source
        # A request that extends the previous one shares its (grown) lists: scale only the new
        # blocks. The cache keeps the source list itself, so its identity cannot be reused.
        cached = self._scaled
        if cached is not None and cached[0] is source and cached[1] <= len(source):
            _, done, overhead, out = cached
        else:
            done, overhead, out = 0, 0, []
        s, blocks = self.token_scale, request.blocks
        for i in range(done, len(source)):
            if blocks[i].kind == "overhead":
                overhead = blocks[i].tokens
            out.append(overhead + round(s * (source[i] - overhead)))
        self._scaled = (source, len(source), overhead, out)
        return out

    def total(self, request: RenderedRequest) -> int:
        """Whole-request provider tokens (scaled like :meth:`cum`)."""
        if self.token_scale == 1.0:
            return request.total_tokens
        overhead = request.overhead_tokens
        return overhead + round(self.token_scale * (request.total_tokens - overhead))

    def draw(self, *key: object) -> float:
        """A deterministic uniform draw in [0, 1) for best-effort behaviour, from the seed and ``key``."""
        data = repr((self.seed, self.label, *key)).encode()
        return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") / 2**64


def longest_readable_prefix(store: CacheStore, request: RenderedRequest, t: float) -> int:
    """Index of the last block whose prefix key is readable in ``store`` (-1 if none).

    Prefix models store every boundary of a prompt, so readability is monotone along a request (a
    readable prefix's shorter prefixes were written and refreshed with it): the boundary between
    readable and not is found by bisection, in O(log n) lookups instead of a walk over the request.
    """
    hashes = request.hashes
    low, high = 0, len(hashes)  # invariant: hashes[:low] readable, hashes[high:] not
    while low < high:
        middle = (low + high) // 2
        if not store.readable_at(hashes[middle], middle, t):
            high = middle
        else:
            low = middle + 1
    return low - 1


PROFILES: Registry[type[CacheProfile]] = Registry(
    "cache provider", entry_points="contextlab.cache_providers", convert=subclass_of(CacheProfile, "cache provider")
)
"""Provider name → profile class (lazy ``module:attr``; the ``contextlab.cache_providers`` entry points too)."""
for _name, _target in (
    ("anthropic", "contextlab.cache.anthropic:AnthropicProfile"),
    ("openai", "contextlab.cache.openai:OpenAIProfile"),
    ("gemini", "contextlab.cache.gemini:GeminiProfile"),
    ("deepseek", "contextlab.cache.deepseek:DeepSeekProfile"),
    ("prefix", "contextlab.cache.prefix:PrefixProfile"),
):
    PROFILES.register(_name, target=_target, source="builtin")

PROFILE_CLASSES: dict[str, str] = mapping_of_targets(PROFILES)
"""The built-in providers as ``name → module:Class`` (the table :data:`PROFILES` was before it)."""


def make_profile(spec: str | CacheProfile, **options: Any) -> CacheProfile:
    """A profile from ``PROVIDER[:MODEL]`` (e.g. ``anthropic:claude-opus-4-6``) or an instance (cloned).

    Raises:
        ConfigError: Unknown provider or option.
    """
    if isinstance(spec, CacheProfile):
        return spec.clone()
    provider, _, model = spec.partition(":")
    cls = PROFILES.lookup(provider.strip().lower())
    return cls(model.strip() or None, **options)
