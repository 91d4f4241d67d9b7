"""Word lists and small seeded text helpers for the generated datasets.

Everything takes an explicit :class:`random.Random`; nothing iterates over a set or uses
``hash()``, so the output is the same on every run and every Python build.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

NOUNS: tuple[str, ...] = (
    "ledger",
    "invoice",
    "shard",
    "session",
    "payload",
    "cursor",
    "snapshot",
    "token",
    "account",
    "batch",
    "schedule",
    "quota",
    "manifest",
    "webhook",
    "report",
    "tenant",
    "export",
    "profile",
    "catalog",
    "order",
    "receipt",
    "channel",
    "digest",
    "journal",
    "bucket",
    "policy",
    "window",
    "segment",
    "mirror",
    "cache",
    "index",
    "partition",
    "lease",
    "checkpoint",
    "artifact",
    "queue",
)
VERBS: tuple[str, ...] = (
    "load",
    "parse",
    "merge",
    "sync",
    "reconcile",
    "validate",
    "render",
    "flush",
    "resolve",
    "apply",
    "collect",
    "compact",
    "rotate",
    "refresh",
    "publish",
    "archive",
    "hydrate",
    "normalize",
    "split",
    "schedule",
    "encode",
    "decode",
    "prune",
    "rebuild",
    "estimate",
    "dispatch",
    "register",
    "verify",
)
ADJECTIVES: tuple[str, ...] = (
    "pending",
    "stale",
    "active",
    "partial",
    "cached",
    "remote",
    "local",
    "signed",
    "expired",
    "dirty",
    "primary",
    "shadow",
    "nightly",
    "batched",
    "legacy",
    "raw",
    "effective",
    "default",
)
FIRST_NAMES: tuple[str, ...] = (
    "Amara",
    "Bastian",
    "Chiara",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kavya",
    "Lorenzo",
    "Mei",
    "Nadia",
    "Oskar",
    "Priya",
    "Quentin",
    "Rosa",
    "Soren",
    "Tamsin",
    "Umar",
    "Vera",
    "Wiebke",
    "Xavier",
    "Yara",
    "Zeno",
)
LAST_NAMES: tuple[str, ...] = (
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Haddad",
    "Kowalski",
    "Ferreira",
    "Novak",
    "Brennan",
    "Achterberg",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Ghosh",
    "Ivanova",
    "Jensen",
    "Kruger",
    "Laine",
)
FILLER_SENTENCES: tuple[str, ...] = (
    "This keeps the behaviour consistent with the rest of the module.",
    "The change is small and covered by the existing tests.",
    "I checked the call sites and none of them rely on the old ordering.",
    "Nothing else in the repository imports this helper directly.",
    "The failure only shows up when the batch is larger than the page size.",
    "The log lines around it are noise from the retry loop.",
    "The fixture data has not changed since the last release.",
    "It is the same pattern the scheduler module already uses.",
    "The type hints were already there; only the body changes.",
    "Edge cases with empty input are handled by the early return.",
)


def pick(rng: random.Random, items: Sequence[T]) -> T:
    """One item, uniformly."""
    return items[rng.randrange(len(items))]


def sample(rng: random.Random, items: Sequence[T], k: int) -> list[T]:
    """``k`` distinct items, in a seeded order."""
    return rng.sample(list(items), min(k, len(items)))


def code(rng: random.Random, prefix: str, digits: int = 4) -> str:
    """An identifier like ``ORB-4172``."""
    return f"{prefix}-{rng.randrange(10 ** (digits - 1), 10**digits)}"


def hexid(rng: random.Random, length: int = 10) -> str:
    """Lower-case hex, like a short commit hash."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def slug(rng: random.Random, parts: int = 2) -> str:
    """``word-word-xxxx``: a host, branch or cluster name."""
    words = [pick(rng, NOUNS) for _ in range(parts)]
    tail = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(4))
    return "-".join([*words, tail])


def person(rng: random.Random) -> str:
    """A full name."""
    return f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"


def filler(rng: random.Random, n: int) -> str:
    """``n`` plausible connective sentences."""
    return " ".join(pick(rng, FILLER_SENTENCES) for _ in range(n))
