"""A plain model: the longest common prefix with the previous request is read, the rest written.

No minimum, no TTL, no provider rules: the baseline the real provider models are compared with.
Counted in tokens or in characters (then converted back to tokens in proportion).
"""

from __future__ import annotations

from typing import Any

from contextlab.cache.blocks import RenderedRequest
from contextlab.cache.profiles import CacheProfile, CacheResult, Marker
from contextlab.cache.store import common_prefix
from contextlab.errors import ConfigError


class PrefixProfile(CacheProfile):
    """Longest common prefix with the previous request.

    Options:
        read_mult: Price multiplier of read tokens (used when no price row exists; default 0.1).
        write_mult: Price multiplier of written tokens (default 1.0: no write fee).
        unit: ``tokens`` (block-exact) or ``chars`` (the prefix measured in characters).
    """

    provider = "prefix"
    default_model = "generic"

    def configure(self, *, read_mult: float = 0.1, write_mult: float = 1.0, unit: str = "tokens", **rest: Any) -> None:
        super().configure(**rest)
        if unit not in ("tokens", "chars"):
            raise ConfigError(f"prefix: unit must be tokens or chars, got {unit!r}")
        self.read_mult = float(read_mult)
        self.write_mult = float(write_mult)
        self.unit = unit
        self._previous: tuple[list[bytes], int] = ([], 0)  # the previous request's keys and their count

    def simulate(self, request: RenderedRequest, markers: list[Marker], t: float) -> CacheResult:
        total = self.total(request)
        cum = self.cum(request)
        (old, size), hashes = self._previous, request.hashes
        shared = common_prefix(old, hashes, size)
        self._previous = (hashes, len(hashes))
        if shared == 0:
            read = 0
        elif self.unit == "tokens":
            read = cum[shared - 1]
        else:
            chars_total = request.cum_chars[-1] or 1
            read = round(total * request.cum_chars[shared - 1] / chars_total)
        read = min(read, total)
        # Everything past the common prefix is (re)written so the next request can read it.
        write = cum[-1] - read if cum else 0
        write = max(0, min(write, total - read))
        return CacheResult(total, read, write, total - read - write, {"5m": write} if write else {})
