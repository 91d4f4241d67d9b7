"""The replay freezes the heap it starts with, and gives it back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from contextlab import HostSettings, replay
from contextlab.examples import tool_conversation
from contextlab.host.heap import frozen_heap


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_objects_that_exist_are_frozen_inside_and_unfrozen_after() -> None:
    older = [object() for _ in range(10)]  # tracked containers are what freezing counts
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        with frozen_heap():  # nested: one freeze
            frozen = gc.get_freeze_count()
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0
    assert older


def test_a_freeze_made_by_the_process_is_left_alone() -> None:
    gc.freeze()
    before = gc.get_freeze_count()
    with frozen_heap():
        pass
    assert gc.get_freeze_count() == before


def test_garbage_cycles_made_inside_are_still_collected() -> None:
    with frozen_heap():
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1


def test_a_replay_leaves_the_freeze_as_it_found_it() -> None:
    session = tool_conversation(4)
    result = replay(session, "passthrough", HostSettings(context_length=100_000), probes=False)
    assert result.status == "ok"
    assert gc.get_freeze_count() == 0


def test_a_child_forked_inside_a_replay_can_replay_and_keeps_the_inherited_freeze() -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    with frozen_heap():
        child = context.Process(target=_replay_in_child)
        child.start()
        child.join(60)
    assert child.exitcode == 0


def _replay_in_child() -> None:
    inherited = gc.get_freeze_count()
    assert inherited > 0
    result = replay(tool_conversation(2), "passthrough", HostSettings(context_length=100_000), probes=False)
    assert result.status == "ok"
    assert gc.get_freeze_count() > inherited // 2  # the inherited freeze is not undone
