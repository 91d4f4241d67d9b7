"""One progress bar for every long command (``bench``, ``check``, ``calibrate``, long replays).

``tqdm.auto`` is used when it is installed (the ``[notebook]`` extra: a widget bar in notebooks);
otherwise a small built-in text bar on stderr with a rate and an ETA, so the core install has
progress too. Bars are off when ``TQDM_DISABLE`` or ``CONTEXTLAB_NO_PROGRESS`` is set, and the
built-in bar draws only on a terminal (a log file gets no carriage-return noise).
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Any, Protocol, TextIO


class ProgressBar(Protocol):
    """What callers use: ``update(n)`` and ``close()`` (also a context manager)."""

    def update(self, n: int = 1) -> Any: ...

    def close(self) -> Any: ...


def progress_disabled() -> bool:
    """True when the environment turns progress bars off."""
    for name in ("TQDM_DISABLE", "CONTEXTLAB_NO_PROGRESS"):
        if os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no"):
            return True
    return False


def progress_bar(total: int, desc: str, *, unit: str = "it", enabled: bool | None = None) -> ProgressBar:
    """A bar over ``total`` steps named ``desc``.

    Args:
        total: Number of steps.
        desc: Label shown before the bar (``"bench"``, ``"check mask_window"``).
        unit: What one step is (``"run"``, ``"request"``).
        enabled: Force on or off; None means on unless the environment disables it.
    """
    on = (not progress_disabled()) if enabled is None else enabled
    if not on or total <= 0:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return TextBar(total, desc, unit=unit)
    # disable=False explicitly: tqdm reads TQDM_* variables once, when it is first imported, so without it a
    # TQDM_DISABLE set at that moment would outlive its removal; progress_disabled() above is the one rule.
    bar: ProgressBar = tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True, disable=False)
    return bar


class _NoBar:
    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


class TextBar:
    """A one-line stderr bar: ``bench  42% |████▏     | 21/50 run  3.1 run/s  ETA 9s``.

    Redraws at most 10 times a second; draws nothing unless ``stream`` is a terminal (or ``force``).
    """

    WIDTH = 20

    def __init__(
        self, total: int, desc: str, *, unit: str = "it", stream: TextIO | None = None, force: bool = False
    ) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.stream = stream if stream is not None else sys.stderr
        self.active = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.n = 0
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.n = min(self.total, self.n + n)
        now = time.monotonic()
        if self.active and (now - self._drawn_at >= 0.1 or self.n == self.total):
            self._drawn_at = now
            self.stream.write("\r" + self.render(now - self.started))
            self.stream.flush()

    def render(self, elapsed: float) -> str:
        """The bar's text after ``elapsed`` seconds."""
        share = self.n / self.total if self.total else 1.0
        filled = int(share * self.WIDTH)
        bar = "█" * filled + " " * (self.WIDTH - filled)
        rate = self.n / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.n) / rate if rate > 0 else None
        tail = f"ETA {format_seconds(eta)}" if eta is not None and self.n < self.total else format_seconds(elapsed)
        return f"{self.desc} {share:4.0%} |{bar}| {self.n}/{self.total} {self.unit}  {rate:.1f} {self.unit}/s  {tail}"

    def close(self) -> None:
        if self.active and not self._closed:
            self.stream.write("\r" + " " * (len(self.render(time.monotonic() - self.started)) + 2) + "\r")
            self.stream.flush()
        self._closed = True

    def __enter__(self) -> TextBar:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def format_seconds(seconds: float) -> str:
    """``"9s"``, ``"2m05s"``, ``"1h02m"``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


LONG_REPLAY_REQUESTS = 200
"""A replay of at least this many requests shows a progress bar in the CLI."""


class ReplayProgress:
    """A request observer that advances one bar per provider request of a replay (adds no columns).

    Pass it in ``observers=``; the host calls ``bind(transcript)`` before the first request, which
    sizes the bar, and ``summary()`` at the end, which closes it.
    """

    def __init__(self, desc: str = "replay", *, enabled: bool | None = None) -> None:
        self.desc, self.enabled = desc, enabled
        self._bar: ProgressBar = _NoBar()

    def bind(self, transcript: Any) -> None:
        self._bar = progress_bar(int(transcript.n_requests), self.desc, unit="request", enabled=self.enabled)

    def columns(self) -> list[str]:
        return []

    def observe(self, view: Any) -> dict[str, Any]:
        self._bar.update(1)
        return {}

    def summary(self) -> dict[str, Any]:
        self._bar.close()
        return {}

    def clone(self) -> ReplayProgress:
        return ReplayProgress(self.desc, enabled=self.enabled)
