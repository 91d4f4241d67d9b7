"""Anti-thrash state of the compressor: ineffective strikes, the fallback streak and summary-failure
cooldowns (``host-contract.md`` §2b, §2c, §2d step 6). Time comes from the replay's virtual clock."""

from __future__ import annotations

import math
from dataclasses import dataclass

from contextlab import clock
from contextlab.engines.summarizers.base import FailureKind

STRIKE_LIMIT = 2
FALLBACK_STREAK_LIMIT = 2
TIMEOUT_LADDER: tuple[float, ...] = (60.0, 300.0, 900.0)
JSON_STREAM_COOLDOWN = 30.0
OTHER_COOLDOWN = 60.0
NO_PROVIDER_COOLDOWN = 600.0
STRUCTURAL_BACKOFF = 300.0
"""Upstream ``_STRUCTURAL_NO_OP_BACKOFF_SECONDS``: a no-op with nothing eligible defers retries, no strike."""


def cooldown_for(kind: FailureKind, timeout_failures: int) -> float:
    """Seconds of cooldown after a failure of ``kind`` (``timeout_failures`` counts this one)."""
    if kind is FailureKind.TIMEOUT:
        return TIMEOUT_LADDER[min(max(timeout_failures, 1), len(TIMEOUT_LADDER)) - 1]
    if kind in (FailureKind.JSON, FailureKind.STREAM):
        return JSON_STREAM_COOLDOWN
    if kind is FailureKind.NO_PROVIDER:
        return NO_PROVIDER_COOLDOWN
    return OTHER_COOLDOWN


@dataclass
class AntiThrash:
    """Per-session anti-thrash counters. In memory: upstream persists the strikes, the fallback streak,
    and the cooldown on the session row so a restart does not disarm them; a replay is
    one process, so nothing is lost here (``docs/compressor.md``)."""

    ineffective: int = 0
    fallback_streak: int = 0
    cooldown_until: float = 0.0
    timeout_failures: int = 0
    structural_until: float = 0.0

    def strike(self) -> None:
        """An ineffective compaction: real usage still over threshold, or a no-op pass."""
        self.ineffective += 1

    def reset_strikes(self) -> None:
        self.ineffective = 0

    def cooldown_remaining(self) -> float:
        return max(0.0, self.cooldown_until - clock.now())

    def blocked_reason(self) -> str | None:
        """``"cooldown:<s>"`` while a failure cooldown runs, ``"ineffective"`` after two strikes
        (or two fallback summaries in a row), else None."""
        remaining = self.cooldown_remaining()
        if remaining > 0:
            return f"cooldown:{math.ceil(remaining)}"
        structural = self.structural_until - clock.now()
        if structural > 0:
            return f"structural_backoff:{math.ceil(structural)}"
        if self.ineffective >= STRIKE_LIMIT or self.fallback_streak >= FALLBACK_STREAK_LIMIT:
            return "ineffective"
        return None

    def record_failure(self, kind: FailureKind) -> float:
        """Start the cooldown for a summary failure; returns its length in seconds."""
        if kind is FailureKind.TIMEOUT:
            self.timeout_failures += 1
        seconds = cooldown_for(kind, self.timeout_failures)
        self.cooldown_until = clock.now() + seconds
        return seconds

    def record_success(self) -> None:
        """A summary succeeded: the timeout ladder and the cooldown reset."""
        self.timeout_failures = 0
        self.structural_until = 0.0
        self.cooldown_until = 0.0

    def structural_no_op(self) -> None:
        """Nothing eligible to compress: back off for a while instead of striking (upstream #93022)."""
        self.structural_until = clock.now() + STRUCTURAL_BACKOFF

    def clear_structural(self) -> None:
        """A completed compaction (or a forced ``/compress``) lifts the structural backoff."""
        self.structural_until = 0.0

    def clear_cooldown(self) -> None:
        """``force=True`` (manual ``/compress``) bypasses the cooldown."""
        self.cooldown_until = 0.0

    def clear(self) -> None:
        self.ineffective = 0
        self.fallback_streak = 0
        self.cooldown_until = 0.0
        self.timeout_failures = 0
        self.structural_until = 0.0


@dataclass(frozen=True)
class StoredThrash:
    """What the host's session store keeps of the anti-thrash state when a session ends, for a
    compaction boundary's ``on_session_start`` to read back (upstream persists these on the session
    row: ``set_compression_fallback_streak`` and its siblings)."""

    fallback_streak: int
    ineffective: int
    cooldown_until: float
