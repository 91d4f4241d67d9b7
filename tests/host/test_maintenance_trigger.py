"""The turn-start maintenance pass: asked for by ``should_compress_preflight`` below the threshold."""

from __future__ import annotations

from typing import get_args

from contextlab import HostSettings, replay
from contextlab.examples import tool_conversation
from contextlab.schema import Trigger
from tests.toy_engines import KeepLastEngine


class MaintainingEngine(KeepLastEngine):
    """Never over its threshold, but asks for a pass at the start of every turn past the fourth."""

    def should_compress_preflight(self, messages: list[dict]) -> bool:
        return sum(m.get("role") == "user" for m in messages) > 4


def test_maintenance_passes_are_recorded_with_a_declared_trigger() -> None:
    result = replay(tool_conversation(8), MaintainingEngine(threshold_tokens=10**9), HostSettings())
    triggers = result.compactions["trigger"].tolist()
    assert triggers and set(triggers) == {"maintenance"}
    assert set(triggers) <= set(get_args(Trigger))
    assert (result.compactions["outcome"] == "committed").all() and result.summary["violations"] == 0
