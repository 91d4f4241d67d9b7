"""Engines that misbehave at the process level, for the crash-proof sweep tests.

Importable as ``tests.bench_engines`` so spawned workers can import them by reference too.
"""

from __future__ import annotations

import os
import time
from typing import Any

from contextlab.engines.passthrough import PassthroughEngine


class ExitOnSessionEngine(PassthroughEngine):
    """Ends its whole process (``os._exit``, as a segfault would) when replaying transcript ``victim``."""

    def __init__(self, victim: str = "t3", delay_s: float = 0.0, code: int = 7) -> None:
        super().__init__()
        self.victim, self.delay_s, self.code = victim, delay_s, code

    @property
    def name(self) -> str:
        return "exit_on_session"

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        if session_id == f"replay-{self.victim}":
            time.sleep(self.delay_s)
            os._exit(self.code)


class SleepForeverEngine(PassthroughEngine):
    """Never returns from its first hook call: only a run timeout stops it."""

    @property
    def name(self) -> str:
        return "sleep_forever"

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        time.sleep(3600)
