"""Prefix keys: one 16-byte key per block naming every block up to it, extended a list at a time.

The key of block ``i`` is a polynomial hash of the digests of blocks ``0..i`` in four independent
lanes: ``h[i] = (h[i-1] * B + d[i]) mod p``, with ``p`` a prime just under 2**31, ``B`` a primitive
root of it, and ``d[i]`` one 32-bit word of block ``i``'s (blake2b) digest; the key packs the four
lanes. Two prefixes share a key exactly when they share every lane: for different digest sequences
of at most ``p - 1`` blocks that happens by chance with probability ~1/p per lane, ~2**-124 in all,
which is as good as a chained 128-bit digest.

Unlike a chained digest (a Python-level hasher call per block), the lanes are linear, so the keys
of a whole run of new blocks come from a handful of numpy operations:

    h[s + k] = B**(k + 1) * h[s - 1] + B**k * sum(d[s + l] * B**-l for l in 0..k)   (mod p)

An engine that re-orders its request re-keys hundreds of blocks per request; an appended turn
(a few blocks) takes the plain per-block loop, which costs less than the numpy set-up.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

PRIMES = (2147483647, 2147483629, 2147483587, 2147483579)
"""One prime per lane, each just under 2**31 (lane products fit in int64)."""
BASES = (828208066, 666393600, 404380205, 2038116315)
"""A primitive root of each lane's prime (so no two positions get the same power of it before
``p - 1`` blocks; ``tests/cache/test_prefix_keys.py`` checks both properties)."""
KEY_SIZE = 16
_SMALL = 8  # up to this many new blocks, the plain loop beats the numpy set-up
_LANES = struct.Struct("<4I")
_P = np.array(PRIMES, dtype=np.int64)
_B = np.array(BASES, dtype=np.int64)
_B_INVERSE = np.array([pow(b, p - 2, p) for b, p in zip(BASES, PRIMES, strict=True)], dtype=np.int64)


class _Powers:
    """``B**k`` and ``B**-k`` (mod p) per lane for k = 0..n-1, grown by doubling as needed."""

    def __init__(self) -> None:
        self.up = np.ones((1, 4), dtype=np.int64)
        self.down = np.ones((1, 4), dtype=np.int64)

    def ensure(self, n: int) -> None:
        while len(self.up) < n:
            # Row k + m is row k times B**m (B**-m below), m the rows so far: one product per doubling.
            step_up = self.up[-1] * _B % _P
            step_down = self.down[-1] * _B_INVERSE % _P
            self.up = np.concatenate((self.up, self.up * step_up % _P))
            self.down = np.concatenate((self.down, self.down * step_down % _P))


_POWERS = _Powers()


def extend_keys(keys: list[bytes], digests: Sequence[bytes]) -> None:
    """Append to ``keys`` (the prefix keys of the blocks so far) the keys of blocks with ``digests``
    (16 bytes each)."""
    if not digests:
        return
    lanes = _LANES.unpack(keys[-1]) if keys else (0, 0, 0, 0)
    if len(digests) <= _SMALL:
        h0, h1, h2, h3 = lanes
        (p0, p1, p2, p3), (b0, b1, b2, b3) = PRIMES, BASES
        unpack, pack, append = _LANES.unpack_from, _LANES.pack, keys.append
        for digest in digests:
            d0, d1, d2, d3 = unpack(digest)
            h0, h1, h2, h3 = (h0 * b0 + d0) % p0, (h1 * b1 + d1) % p1, (h2 * b2 + d2) % p2, (h3 * b3 + d3) % p3
            append(pack(h0, h1, h2, h3))
        return
    n = len(digests)
    _POWERS.ensure(n + 1)
    # Every product below is of two numbers under 2**32 and 2**31 (under 2**63), and every sum of
    # at most n of them stays in int64 for any request (n < 2**31), so one reduction per step does.
    words = np.frombuffer(b"".join(digests), dtype="<u4").reshape(n, 4).astype(np.int64)
    sums = np.cumsum(words * _POWERS.down[:n] % _P, axis=0) % _P
    found = (sums * _POWERS.up[:n] + np.array(lanes, dtype=np.int64) * _POWERS.up[1 : n + 1]) % _P
    keys.extend(found.astype("<u4").view(f"V{KEY_SIZE}").ravel().tolist())
