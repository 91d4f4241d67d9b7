"""Engine copies record their changes; the host re-copies exactly the changed rows and hands out
lists equal to fresh copies of its history (the from-scratch computation)."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from contextlab.host.tracked import TrackedDict, TrackedList, tracked_clone
from contextlab.host.views import _Mirror
from contextlab.messages import UidMinter, clone_messages, stamp_identity

from .test_incremental import _random_rows

DICT_CHANGES: list[Callable[[dict[str, Any]], Any]] = [
    lambda d: d.__setitem__("content", "x"),
    lambda d: d.__delitem__(next(iter(d))),
    lambda d: d.pop(next(iter(d))),
    lambda d: d.pop("missing", None),
    lambda d: d.popitem(),
    lambda d: d.clear(),
    lambda d: d.update(extra=1),
    lambda d: d.setdefault("extra", 1),
    lambda d: d.__ior__({"extra": 1}),
]
LIST_CHANGES: list[Callable[[list[Any]], Any]] = [
    lambda v: v.append(1),
    lambda v: v.extend([1]),
    lambda v: v.insert(0, 1),
    lambda v: v.pop(),
    lambda v: v.remove(v[0]),
    lambda v: v.clear(),
    lambda v: v.sort(key=str),
    lambda v: v.reverse(),
    lambda v: v.__setitem__(0, 1),
    lambda v: v.__delitem__(slice(0, 1)),
    lambda v: v.__iadd__([1]),
    lambda v: v.__imul__(2),
]


def _row() -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {"role": "assistant", "content": "calling", "tool_calls": [call]}


@pytest.mark.parametrize("change", DICT_CHANGES)
def test_every_dict_mutation_records_its_row(change: Callable[[dict[str, Any]], Any]) -> None:
    for reach in (lambda r: r, lambda r: r["tool_calls"][0], lambda r: r["tool_calls"][0]["function"]):
        changed: set[int] = set()
        row = tracked_clone(_row(), (changed, 7))
        change(reach(row))
        assert changed == {7}


@pytest.mark.parametrize("change", LIST_CHANGES)
def test_every_list_mutation_records_its_row(change: Callable[[list[Any]], Any]) -> None:
    changed: set[int] = set()
    row = tracked_clone(_row(), (changed, 3))
    change(row["tool_calls"])
    assert changed == {3}


def test_a_tracked_clone_is_an_equal_plain_looking_copy() -> None:
    changed: set[int] = set()
    source = _row()
    row = tracked_clone(source, (changed, 0))
    assert isinstance(row, dict) and isinstance(row, TrackedDict) and isinstance(row["tool_calls"], TrackedList)
    assert row == source and json.dumps(row) == json.dumps(source)
    assert row["tool_calls"] is not source["tool_calls"] and row["content"] is source["content"]
    assert {**row} == source and clone_messages([row])[0] == source and type(clone_messages([row])[0]) is dict
    assert not changed  # reading, copying and serializing change nothing


def test_mirrors_equal_fresh_copies_after_random_engine_changes_and_host_stamping() -> None:
    rng = random.Random(3)
    history = _random_rows(rng, 150)[1:]
    minter = UidMinter(1)
    mirror = _Mirror()
    n = 20
    handed = mirror.sync(history[:n])
    for step in range(400):
        # The engine scribbles on some rows it was handed (top level or nested), or leaves them.
        for row in rng.sample(handed, min(len(handed), rng.choice([0, 0, 1, 3]))):
            target: Any = row
            if row.get("tool_calls") and rng.random() < 0.5:
                target = row["tool_calls"][0]["function"] if rng.random() < 0.5 else row["tool_calls"]
            with contextlib.suppress(KeyError, IndexError, StopIteration):  # an empty row or list
                rng.choice(LIST_CHANGES if isinstance(target, list) else DICT_CHANGES)(target)
        if rng.random() < 0.3:  # the host stamps the rows it appended (its only in-place change)
            stamp_identity(history, minter, start=max(0, n - rng.randint(1, 5)))
        n = min(len(history), n + rng.choice([0, 0, 1, 2]))
        before = [id(r) for r in mirror.rows]
        handed = mirror.sync(history[:n])
        assert handed == clone_messages(history[:n]), step  # what fresh copies would be
        assert all(a is not b for a, b in zip(handed, history, strict=False))
        # Rows nobody touched keep their clone (that is what lets the host recognise them).
        kept = sum(id(r) == b for r, b in zip(handed, before, strict=False))
        assert kept >= len(before) - 8
