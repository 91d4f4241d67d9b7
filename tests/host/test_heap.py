"""The replay freezes the heap it starts with and puts off full collections, and gives both back as they were."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from contextlab import HostSettings, replay
from contextlab.examples import tool_conversation
from contextlab.host.heap import quiet_collector


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_objects_that_exist_are_frozen_inside_and_unfrozen_after() -> None:
    older = [object() for _ in range(10)]  # tracked containers are what freezing counts
    assert gc.get_freeze_count() == 0
    with quiet_collector():
        assert gc.get_freeze_count() > 0
        with quiet_collector():  # nested: one freeze
            frozen = gc.get_freeze_count()
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0
    assert older


def test_a_freeze_made_by_the_process_is_left_alone() -> None:
    gc.freeze()
    before = gc.get_freeze_count()
    with quiet_collector():
        pass
    assert gc.get_freeze_count() == before


def test_garbage_cycles_made_inside_are_still_collected() -> None:
    with quiet_collector():
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
    with quiet_collector():
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


def test_full_collections_are_rare_inside_and_the_thresholds_come_back_after() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with quiet_collector():
            young, middle, old = gc.get_threshold()
            assert (young, middle) == (700, 10)
            assert old >= 1_000
            with quiet_collector():  # nested: one setting
                assert gc.get_threshold()[2] == old
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_thresholds_set_inside_the_block_by_someone_else_are_kept() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with quiet_collector():
            gc.set_threshold(2_000, 20, 30)
        assert gc.get_threshold() == (2_000, 20, 30)
    finally:
        gc.set_threshold(*before)


def test_a_replay_collects_under_the_relaxed_thresholds_and_restores_them() -> None:
    before = gc.get_threshold()
    seen: set[tuple[int, int, int]] = set()

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.add(gc.get_threshold())

    try:
        gc.set_threshold(10, 1, 1)  # frequent passes, so the replay surely runs some
        gc.callbacks.append(record)
        result = replay(tool_conversation(6), "passthrough", HostSettings(context_length=100_000), probes=False)
        after = gc.get_threshold()
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*before)
    assert result.status == "ok"
    assert after == (10, 1, 1)
    assert (10, 1, 1_000) in seen  # passes ran inside the replay with full collections put off


def test_an_error_inside_the_block_gives_the_thresholds_and_the_freeze_back() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with pytest.raises(RuntimeError, match="engine broke"), quiet_collector():
            raise RuntimeError("engine broke")
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)


def _full_collections_during(passes: int) -> list[int]:
    """The freeze count at the start of each full collection while a block runs ``passes`` middle
    passes under CPython's default thresholds, and as the block ends."""
    before = gc.get_threshold()
    frozen_at_full: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            frozen_at_full.append(gc.get_freeze_count())

    try:
        gc.set_threshold(700, 10, 10)
        gc.collect()  # no middle pass counted before the block
        gc.callbacks.append(record)
        with quiet_collector():
            for _ in range(passes):
                gc.collect(1)
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*before)
    return frozen_at_full


def test_a_full_collection_put_off_runs_as_the_block_ends_over_what_it_made() -> None:
    """More middle passes than CPython allows between full collections: the one it put off runs as
    the block ends, while the heap the block found is still frozen (only the block's objects are
    scanned); then the freeze is undone."""
    frozen_at_full = _full_collections_during(12)
    assert len(frozen_at_full) == 1 and frozen_at_full[0] > 0
    assert gc.get_freeze_count() == 0


def test_no_full_collection_is_added_when_none_was_due() -> None:
    assert _full_collections_during(5) == []
