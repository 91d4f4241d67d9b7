"""retrieval: BM25 selection within a budget, stable when nothing changed, reselect on a new query."""

from __future__ import annotations

import pytest
from engine_helpers import load, tool_session

from contextlab.engines.parts import TokenEstimator, head_end
from contextlab.errors import EngineError
from contextlab.messages import validate_messages


def session_with_topics() -> list[dict]:
    messages = tool_session(30, lines=15)
    messages[12 * 3 + 3]["content"] += "\nthe kangaroo migration config lives here"
    return messages


def test_fits_the_budget_returns_none() -> None:
    engine = load("retrieval", context_length=200_000)
    messages = tool_session(5)
    assert engine.select_context(messages, conversation_messages=messages, budget_tokens=200_000) is None


def test_selection_keeps_head_recent_and_relevant_within_budget() -> None:
    engine = load("retrieval", context_length=8_000, recent_messages=6)
    messages = session_with_topics()
    incoming = {"role": "user", "content": "where is the kangaroo migration config?"}
    view = engine.select_context(
        messages, conversation_messages=messages, incoming_message=incoming, budget_tokens=8_000
    )
    assert view is not None and validate_messages(view) == []
    assert TokenEstimator().messages(view) <= 4_000 + 50  # budget_fraction 0.5 (+ gap markers)
    assert view[0] is messages[0]
    assert view[-6:] == messages[-6:]
    assert any("kangaroo" in str(m.get("content")) for m in view)
    assert any(str(m.get("content")).startswith("[… ") for m in view)


def test_sticky_returns_an_equal_list_when_nothing_changed() -> None:
    engine = load("retrieval", context_length=8_000, recent_messages=6)
    messages = session_with_topics()
    incoming = {"role": "user", "content": "kangaroo migration config"}
    first = engine.select_context(
        messages, conversation_messages=messages, incoming_message=incoming, budget_tokens=8_000
    )
    again = engine.select_context(
        messages, conversation_messages=messages, incoming_message=incoming, budget_tokens=8_000
    )
    assert first == again and engine.reselections == 1


def test_sticky_selection_stays_append_only_as_the_window_slides() -> None:
    engine = load("retrieval", context_length=8_000, recent_messages=6)
    messages = session_with_topics()
    incoming = {"role": "user", "content": "kangaroo migration config"}
    first = engine.select_context(messages[:-6], incoming_message=incoming, budget_tokens=8_000)
    second = engine.select_context(messages[:-3], incoming_message=incoming, budget_tokens=8_000)
    assert first is not None and second is not None
    assert second[: len(first)] == first  # the new request extends the old one: the cache prefix survives


def test_changed_query_reselects() -> None:
    engine = load("retrieval", context_length=8_000, recent_messages=6)
    messages = session_with_topics()
    engine.select_context(
        messages, incoming_message={"role": "user", "content": "kangaroo migration"}, budget_tokens=8_000
    )
    engine.select_context(
        messages,
        incoming_message={"role": "user", "content": "totally different words now"},
        budget_tokens=8_000,
    )
    assert engine.reselections == 2


def test_incremental_rankings_equal_fresh_engines_as_the_session_grows() -> None:
    """One engine fed a growing session (its index extended group by group, rankings taking the
    previous ranking's documents over) selects what a fresh engine selects for each request."""
    messages = tool_session(60, lines=12, users=4)
    for i in range(0, len(messages), 7):
        messages[i]["content"] += f" topic_{i % 5} kangaroo_{i % 3}"
    kept = load("retrieval", context_length=6_000, recent_messages=6, sticky=False)
    for end in range(20, len(messages) + 1):
        request = messages[:end]
        incoming = {"role": "user", "content": f"where is topic_{end % 5} and kangaroo_{end % 3}?"}
        fresh = load("retrieval", context_length=6_000, recent_messages=6, sticky=False)
        expected = fresh.select_context(request, incoming_message=incoming, budget_tokens=6_000)
        assert kept.select_context(request, incoming_message=incoming, budget_tokens=6_000) == expected
    assert kept.reselections > 30
    request = messages[:30]  # a shorter request (a compaction): the index drops the groups that left
    incoming = {"role": "user", "content": "topic_1"}
    fresh = load("retrieval", context_length=6_000, recent_messages=6, sticky=False)
    expected = fresh.select_context(request, incoming_message=incoming, budget_tokens=6_000)
    assert kept.select_context(request, incoming_message=incoming, budget_tokens=6_000) == expected


def test_groups_hold_a_share_of_the_budget_so_a_selection_has_few_gaps() -> None:
    """Many short turns that all match the query: with one group per turn the budget fills with
    scattered single turns (a gap marker between each two); groups of at least budget / 16 tokens
    keep the selection to at most 16 groups, each a run of whole turns that holds that much."""
    messages = tool_session(300, lines=1)
    for i, m in enumerate(messages):
        if m.get("role") == "tool" and i % 3 == 0:
            m["content"] += " kangaroo"
    incoming = {"role": "user", "content": "kangaroo"}
    estimator = TokenEstimator()
    gaps = {}
    for fraction in (0.0, 1 / 16):
        engine = load("retrieval", context_length=8_000, recent_messages=6, min_group_fraction=fraction)
        view = engine.select_context(messages, incoming_message=incoming, budget_tokens=8_000)
        assert view is not None and validate_messages(view) == []
        assert estimator.messages(view) <= 4_000 + 50
        is_marker = [str(m.get("content")).startswith("[… ") for m in view]
        gaps[fraction] = sum(is_marker)
        # The kept runs between markers (after the head, before the recent block) are whole groups.
        runs, run = [], []
        head = head_end(messages)
        for m, marker in zip(view[head:], is_marker[head:], strict=True):
            if marker:
                runs.append(run)
                run = []
            else:
                run.append(m)
        assert len(runs) == gaps[fraction]
        for kept in filter(None, runs):  # each run between gaps is whole groups, at least one
            assert estimator.messages(kept) >= int(4_000 * fraction)
    assert gaps[1 / 16] <= 16 + 1 < gaps[0.0]


def test_a_group_share_outside_zero_to_one_is_a_one_line_error() -> None:
    expected = r"^engine 'retrieval' failed to start: .*min_group_fraction must be in \[0, 1\], got 1.5$"
    with pytest.raises(EngineError, match=expected):
        load("retrieval", min_group_fraction=1.5)
