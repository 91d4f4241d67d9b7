"""A committed compaction's ``summary_tokens`` counts the rows whose content (as sent) the history
did not have: handed-out rows kept, or rebuilt equal, are not new; a summary, a changed row or a
row rebuilt with its keys in another order are."""

from __future__ import annotations

import pytest

from contextlab import replay
from contextlab.engine import Message
from contextlab.examples import tool_conversation
from contextlab.messages import freeze, wire_message
from contextlab.tokens import ExactCounter
from tests.toy_engines import BaseToy


class RebuildingEngine(BaseToy):
    """On each compaction: keeps most rows as handed, rebuilds some equal (``dict(row)``), one with
    its keys reversed, changes one, and adds a summary row at the front."""

    def __init__(self, threshold_tokens: int, copies: int, expected: list[int]) -> None:
        super().__init__(threshold_tokens)
        self.copies = copies
        self.expected = expected  # shared with the test (the host may run a copy of the engine)

    def __deepcopy__(self, memo: dict[int, object]) -> RebuildingEngine:
        return RebuildingEngine(self._fixed_threshold, self.copies, self.expected)

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        kept = messages[len(messages) // 2 :]
        while kept and kept[0].get("role") == "tool":
            kept = kept[1:]
        out: list[Message] = [{"role": "user", "content": f"Summary of {len(messages) - len(kept)} rows."}]
        for i, row in enumerate(kept):
            if i < self.copies:
                out.append(dict(row))  # equal content, a new object
            elif i == self.copies:
                out.append(dict(reversed(list(row.items()))))  # equal as a dict, keys in another order
            elif i == self.copies + 1 and isinstance(row.get("content"), str):
                out.append({**row, "content": row["content"] + " (edited)"})
            else:
                out.append(row)
        self.expected.append(_reference(messages, out))
        return out


def _reference(before: list[Message], new: list[Message]) -> int:
    """Exact tokens of the rows of ``new`` whose frozen wire form no row of ``before`` has."""
    counter = ExactCounter()
    old = {freeze(wire_message(m)) for m in before}
    return sum(counter.message(wire_message(m)) for m in new if freeze(wire_message(m)) not in old)


def _run(copies: int, threshold: int, turns: int) -> tuple[list[int], list[int]]:
    expected: list[int] = []
    result = replay(tool_conversation(turns), RebuildingEngine(threshold, copies, expected))
    committed = result.compactions[result.compactions["outcome"] == "committed"]
    return committed["summary_tokens"].tolist(), expected


@pytest.mark.parametrize(
    ("copies", "threshold", "turns"),
    [(0, 1_500, 40), (3, 1_500, 40), (40, 8_000, 80)],  # few new rows (one by one), many (a frozen set)
)
def test_new_content_is_counted_whatever_the_engine_rebuilt(copies: int, threshold: int, turns: int) -> None:
    found, expected = _run(copies, threshold, turns)
    assert found, "the engine never compacted"
    assert found == expected[: len(found)]
