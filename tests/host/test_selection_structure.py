"""The resumed structure pass over selections equals a tracker fed each whole selection."""

from __future__ import annotations

import random
from typing import Any

import pytest

from contextlab.host.selection_structure import EVERY, SelectionStructure, _clean
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


def _outcome_from_scratch(rows: list[dict[str, Any]]) -> tuple[list[Any], bool]:
    tracker = _from_scratch(rows)
    return tracker.violations(), tracker.needs_sanitizing


def _call(*ids: str) -> dict[str, Any]:
    calls = [{"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in ids]
    return {"role": "assistant", "content": "calling", "tool_calls": calls}


def _result(call_id: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "out"}


USER = {"role": "user", "content": "q"}
ANSWER = {"role": "assistant", "content": "a"}
SYSTEM = {"role": "system", "content": "s"}
CASES: list[list[dict[str, Any]]] = [
    [SYSTEM, USER, _call("a", "b"), _result("a"), _result("b"), ANSWER],  # clean
    [SYSTEM, USER, _call("a", "b"), _result("b"), _result("a"), ANSWER],  # answered out of call order
    [USER, _call("a", "a"), _result("a"), _result("a")],  # a repeated call id: the second is a duplicate
    [USER, _call("a", "a"), _result("a")],  # a repeated call id answered once
    [USER, _call("a"), _result("a"), _result("a")],  # a duplicate result
    [USER, _call("a"), USER, _result("a")],  # a result after another message
    [USER, _call("a")],  # unanswered at the end
    [USER, _call("a"), ANSWER],  # unanswered, group closed
    [_result("a"), USER],  # leading tool row
    [SYSTEM, _result("a"), USER],  # tool row after the system row
    [USER, _call(""), ANSWER],  # a call without an id
    [USER, USER, ANSWER],  # adjacent user texts
    [USER, {"role": "user", "content": [{"type": "text", "text": "x"}]}],  # user parts next to a text
    [USER, {"role": "assistant", "content": "", "reasoning_content": "r"}],  # thinking-only
    [USER, {"role": "assistant", "content": "  "}],  # empty
    [USER, {"role": "narrator", "content": "?"}],  # unknown role
    [USER, _call("a"), _result(None)],  # a tool row without tool_call_id
    [USER, _call("1"), _result(1)],  # a call id of another type
    [USER, {"role": "user", "content": "t", "tool_calls": [{"id": "a"}]}, _result("a")],  # a user row's calls
    [USER],
]


@pytest.mark.parametrize("rows", CASES)
def test_outcome_equals_a_whole_pass_on_each_rule(rows: list[dict[str, Any]]) -> None:
    got = SelectionStructure().outcome(rows, [structure_signature(r) for r in rows])
    assert got == _outcome_from_scratch(rows)


def test_the_clean_check_is_taken_only_for_rows_a_tracker_finds_clean() -> None:
    rng = random.Random(23)
    clean = 0
    for _ in range(600):
        pool = _random_rows(rng, rng.randint(1, 30))
        # Mostly well-formed runs (groups kept whole), sometimes random ones.
        rows = [r for r in pool if r.get("role") != "narrator"] if rng.random() < 0.5 else pool
        signatures = [structure_signature(r) for r in rows]
        expected = _outcome_from_scratch(rows)
        if _clean(signatures):
            clean += 1
            assert expected == ([], False)
        assert SelectionStructure().outcome(rows, signatures) == expected
    assert clean > 20
