"""What the host computes for a ``select_context`` result equals a computation from the rows'
contents, whatever the engine returns: handed-out rows moved, repeated or dropped, conversation
rows, rows it built (new, returned again, changed since), or handed-out rows it changed."""

from __future__ import annotations

import copy
import random
from typing import Any

from contextlab.host.history import WorkingHistory
from contextlab.host.memo import MessageMemo
from contextlab.host.selection_structure import structure_signature
from contextlab.messages import UidMinter, stamp_identity
from contextlab.tokens import ExactCounter, RoughCounter

from .test_incremental import _random_rows


def _expected(result: list[dict[str, Any]], source: list[dict[str, Any]]) -> tuple[Any, ...]:
    memo = MessageMemo(ExactCounter(), RoughCounter())
    rows = [memo.row(copy.deepcopy(m)) for m in result]
    signatures = [structure_signature(m) for m in result]
    same = signatures == [structure_signature(m) for m in source]
    return [w for w, _, _ in rows], [e for _, e, _ in rows], [r for _, _, r in rows], same, signatures


def _engine_result(
    rng: random.Random,
    handed: list[dict[str, Any]],
    conversation: list[dict[str, Any]],
    built: list[dict[str, Any]],
    previous: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    kind = rng.choice(["all", "subset", "subset", "shuffled", "mixed", "previous", "previous", "previous"])
    if kind == "previous":  # the previous result's leading run (as a mask or a sticky choice returns it)
        result = previous[: rng.randint(0, len(previous))] + handed[rng.randint(0, len(handed)) :]
    elif kind == "all":
        result = list(handed)
    elif kind == "subset":
        result = [m for m in handed if rng.random() < 0.7]
    elif kind == "shuffled":
        result = rng.sample(handed, len(handed))
    else:
        result = [rng.choice(handed) for _ in range(len(handed))]
    for _ in range(rng.randint(0, 4)):  # rows the engine built, some of them again
        if built and rng.random() < 0.6:
            row = rng.choice(built)
        else:
            row = {"role": rng.choice(["user", "assistant"]), "content": f"marker {rng.randint(0, 5)}"}
            built.append(row)
        result.insert(rng.randint(0, len(result)), row)
    if conversation and rng.random() < 0.2:
        result.insert(rng.randint(0, len(result)), rng.choice(conversation))
    if built and rng.random() < 0.15:  # the engine changes a row it built earlier
        rng.choice(built)["content"] = f"changed {rng.random()}"
    if handed and rng.random() < 0.1:  # the engine changes a row it was handed
        rng.choice(handed)["content"] = "scribbled"
    if previous and rng.random() < 0.1:  # ... or one it was handed before a compaction, and kept
        rng.choice(previous)["content"] = f"scribbled {rng.random()}"
    return result or [handed[0]]


def test_selection_results_equal_a_computation_from_the_rows_contents() -> None:
    rng = random.Random(17)
    pool = _random_rows(rng, 300)[1:]
    history = WorkingHistory(MessageMemo(ExactCounter(), RoughCounter()), "sys")
    views = history.engine_views()
    minter = UidMinter(1)
    built: list[dict[str, Any]] = []
    previous: list[dict[str, Any]] = []
    at = 0
    for step in range(600):
        if rng.random() < 0.02:  # a committed compaction: the history is replaced
            history.replace(list(history.peek()[rng.randint(0, len(history.peek())) :]))
        grow = pool[at : at + rng.choice([0, 1, 1, 2, 3])]
        at += len(grow)
        if grow:
            start = len(history.peek())
            history.append(grow)
            stamp_identity(history.peek(), minter, start=start)
        if not history.peek():
            continue
        handed = views.request()
        source = [{"role": "system", "content": "sys"}, *history.peek()]
        conversation = views.conversation()
        result = _engine_result(rng, handed, conversation, built, previous)
        previous = result
        expected = _expected(result, source)
        wires, exact, rough, same, signatures = views.selection(result)
        assert (wires, exact, rough, same, signatures) == expected, step
        if rng.random() < 0.3:
            built = built[-8:]  # the engine drops some of its rows (they may be freed)
