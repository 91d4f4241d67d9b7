"""Prefix keys: the lanes' constants, and every way of extending a key list gives the plain per-block keys."""

from __future__ import annotations

import hashlib
import random

from contextlab.cache.prefix_keys import BASES, PRIMES, extend_keys

from .helpers import plain_prefix_keys


def _factors(n: int) -> set[int]:
    found, d = set(), 2
    while d * d <= n:
        while n % d == 0:
            found.add(d)
            n //= d
        d += 1
    return found | ({n} if n > 1 else set())


def test_each_lane_is_a_prime_under_2_31_with_a_primitive_root_base() -> None:
    for p, b in zip(PRIMES, BASES, strict=True):
        assert 2**30 < p < 2**31 and _factors(p) == {p}
        # A primitive root: no power below p - 1 is 1, so no two positions share a power of B.
        assert all(pow(b, (p - 1) // q, p) != 1 for q in _factors(p - 1))


def test_keys_are_the_same_however_the_blocks_arrive() -> None:
    rng = random.Random(11)
    digests = [hashlib.blake2b(rng.randbytes(8), digest_size=16).digest() for _ in range(700)]
    expected = plain_prefix_keys(digests)
    for _ in range(40):
        keys: list[bytes] = []
        at = 0
        while at < len(digests):  # runs of every size: the loop (small) and numpy (large) paths
            step = rng.choice([1, 2, 8, 9, 30, 300])
            extend_keys(keys, digests[at : at + step])
            at += step
        assert keys == expected
    # A key names the whole prefix: the same blocks in another order, or one block changed, give
    # other keys from that block on (and equal ones before it).
    swapped = [*digests[:5], digests[6], digests[5], *digests[7:40]]
    keys: list[bytes] = []
    extend_keys(keys, swapped)
    assert keys[:5] == expected[:5] and not set(keys[5:]) & set(expected[:40])
    assert len(set(expected)) == len(expected)
