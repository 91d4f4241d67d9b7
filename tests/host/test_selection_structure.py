"""The resumed structure pass over selections equals a tracker fed each whole selection."""

from __future__ import annotations

import random
from typing import Any

from contextlab.host.selection_structure import EVERY, SelectionStructure
from contextlab.host.views import structure_signature
from contextlab.messages import StructureTracker

from .test_incremental import _random_rows


def _from_scratch(rows: list[dict[str, Any]]) -> StructureTracker:
    tracker = StructureTracker()
    for row in rows:
        tracker.feed(row)
    return tracker


def test_resumed_trackers_match_whole_passes_as_selections_grow_shrink_and_change() -> None:
    rng = random.Random(11)
    pool = _random_rows(rng, 400)
    signature_of: dict[int, tuple[Any, ...]] = {}  # one signature object per row, as the host keeps

    def signatures(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [signature_of.setdefault(id(r), structure_signature(r)) for r in rows]

    structure = SelectionStructure()
    rows = pool[:30]
    resumed_somewhere = False
    for step in range(300):
        kind = rng.choice(["grow", "grow", "shrink", "edit", "edit", "reorder", "same"])
        if kind == "grow":
            rows = rows + rng.sample(pool, rng.randint(1, 12))
        elif kind == "shrink" and len(rows) > 2:
            rows = rows[: rng.randint(1, len(rows) - 1)]
        elif kind == "edit" and rows:
            at = rng.randrange(len(rows))
            rows = rows[:at] + rng.sample(pool, rng.randint(0, 5)) + rows[at + rng.randint(0, 5) :]
        elif kind == "reorder" and len(rows) > 3:
            rows = rows[:1] + rng.sample(rows[1:], len(rows) - 1)
        expected = _from_scratch(rows)
        got = structure.tracker(rows, signatures(rows))
        assert got.violations() == expected.violations(), step
        assert got.needs_sanitizing == expected.needs_sanitizing, step
        resumed_somewhere |= len(structure._states) > 1 and len(rows) > EVERY
    assert resumed_somewhere


def test_a_changed_row_behind_an_equal_signature_object_is_never_assumed() -> None:
    """Only the very signature objects count as unchanged: an equal but new signature is re-fed."""
    structure = SelectionStructure()
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    rows: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    rows += [{"role": "tool", "tool_call_id": "c1", "content": "r"}] + [
        {"role": "user", "content": f"u{i}"} for i in range(40)
    ]
    sigs = [structure_signature(r) for r in rows]
    assert structure.tracker(rows, sigs).violations() == []
    orphan = [*rows[:1], *rows[2:]]  # the call dropped: its result is now an orphan
    got = structure.tracker(orphan, [structure_signature(r) for r in orphan])
    assert [v.rule for v in got.violations()] == [v.rule for v in _from_scratch(orphan).violations()]
    assert "orphan_tool_result" in {v.rule for v in got.violations()}
