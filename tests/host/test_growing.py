"""GrowingView: a request as an O(1) view of the host's append-only lists reads like the list it
stands for, and keeps showing its moment while its owner appends."""

from __future__ import annotations

import itertools

import pytest

from contextlab.host.growing import GrowingView


def _cases() -> list[tuple[GrowingView[int], list[int]]]:
    items = list(range(10, 20))
    cases = []
    for head, n, tail in itertools.product([(), (1,), (1, 2)], [0, 1, 5, 10], [(), (99,)]):
        cases.append((GrowingView(items, n, head, tail), [*head, *items[:n], *tail]))
    return cases


@pytest.mark.parametrize(("view", "expected"), _cases())
def test_indexing_slicing_and_iteration_match_the_list(view: GrowingView[int], expected: list[int]) -> None:
    assert len(view) == len(expected) and list(view) == expected and view == expected
    for i in range(-len(expected), len(expected)):
        assert view[i] == expected[i]
    for bad in (len(expected), -len(expected) - 1):
        with pytest.raises(IndexError):
            view[bad]
    bounds = [None, *range(-len(expected) - 2, len(expected) + 3)]
    for start, stop in itertools.product(bounds, bounds):
        assert view[start:stop] == expected[start:stop]
    assert view[::2] == expected[::2] and view[::-1] == expected[::-1]
    assert list(reversed(view)) == expected[::-1]
    assert (7 in view) == (7 in expected) and bool(view) == bool(expected)


def test_appends_after_the_view_do_not_show_in_it() -> None:
    items = [1, 2, 3]
    view = GrowingView(items, len(items), head=("system",), tail=("pending",))
    items += [4, 5]
    assert list(view) == ["system", 1, 2, 3, "pending"] and view[1:] == [1, 2, 3, "pending"]
    assert repr(view) == "GrowingView(['system', 1, 2, 3, 'pending'])"
    assert view != ["system", 1, 2, 3] and view != "system"
    with pytest.raises(TypeError):
        hash(view)
