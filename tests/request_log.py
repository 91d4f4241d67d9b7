"""An observer that keeps every request a replay sends (for tests that compare request rows)."""

from __future__ import annotations

from typing import Any

from contextlab.engine import Message
from contextlab.host.observers import RequestView


class Requests:
    """Keeps a copy of every request the host sends. One instance serves one replay: ``clone``
    returns it, so the test reads what the host observed."""

    def __init__(self) -> None:
        self.sent: list[list[Message]] = []

    def columns(self) -> list[str]:
        return []

    def observe(self, view: RequestView) -> dict[str, Any]:
        self.sent.append([dict(m) for m in view.messages])
        return {}

    def summary(self) -> dict[str, Any]:
        return {}

    def clone(self) -> Requests:
        return self
