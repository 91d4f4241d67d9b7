"""retrieval kept incremental: every request's selection equals a plain from-scratch computation.

The oracle below is the engine's rule written out directly (bm25s built from scratch, a Python
greedy fill, markers from each gap's neighbours), so a shortcut in the engine that changes any
selection (the group table, the index kept between requests, the numpy order and fill, the sticky
reuse, the gap markers) fails here.
"""

from __future__ import annotations

import copy
import importlib
import random
from typing import Any

import numpy as np
import pytest
from engine_helpers import load, tool_session

from contextlab.engines import parts
from contextlab.engines.parts import TokenEstimator

BUDGET = 6_000


def _module(name: str) -> Any:
    engine = load("retrieval")
    return importlib.import_module(type(engine).__module__ + name)


def plain_selection(
    messages: list[dict[str, Any]], incoming: dict[str, Any], recent_messages: int = 6, min_group_fraction: float = 0.0
) -> Any:
    """The engine's selection with ``sticky=False`` (headroom 0), computed from scratch."""
    ranking = _module(".ranking")
    estimator = TokenEstimator()
    budget = int(BUDGET * 0.5)
    costs_of_rows = [estimator.message(m) for m in messages]
    if budget <= 0 or sum(costs_of_rows) <= budget:
        return None
    head = parts.head_end(messages)
    recent = parts.safe_cut_at_or_before(messages, max(head, len(messages) - recent_messages))
    if recent <= head:
        return None
    # A group runs from a safe row to the first safe row at which it holds min_cost tokens; the
    # rows after the last whole group stay with the recent block.
    min_cost = int(budget * min_group_fraction)
    bounds, start = [], head
    for cut in [*(i for i in range(head + 1, recent) if messages[i].get("role") != "tool"), recent]:
        if sum(costs_of_rows[start:cut]) >= min_cost:
            bounds.append((start, cut))
            start = cut
    if not bounds:
        return None
    recent = start
    costs = [sum(costs_of_rows[s:e]) for s, e in bounds]
    room = budget - sum(costs_of_rows[:head]) - sum(costs_of_rows[recent:])
    terms = ranking.query_terms(incoming, messages)
    documents = [ranking.tokenize(" ".join(parts.content_text(m) for m in messages[s:e])) for s, e in bounds]
    chosen, spent = set(), 0
    for i in ranking.rank_groups(documents, sorted(terms)):
        if spent + costs[i] <= room:
            chosen.add(i)
            spent += costs[i]
    out = list(messages[:head])

    def marker(count: int, after: dict[str, Any] | None) -> dict[str, Any]:
        before_user = bool(out) and out[-1].get("role") == "user"
        near_user = before_user or (after is not None and after.get("role") == "user")
        text = f"[… {count} earlier turn group{'s' if count != 1 else ''} omitted …]"
        return {"role": "assistant" if near_user else "user", "content": text}

    skipped = 0
    for i, (s, e) in enumerate(bounds):
        if i not in chosen:
            skipped += 1
            continue
        if skipped:
            out.append(marker(skipped, messages[s]))
        out.extend(messages[s:e])
        skipped = 0
    if skipped:
        out.append(marker(skipped, messages[recent] if recent < len(messages) else None))
    return out + messages[recent:]


def session(seed: int, n_calls: int = 70) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    messages = tool_session(n_calls, lines=8, users=6)
    words = ["kangaroo", "parser", "migration", "config", "cache", "token", "budget", "wombat"]
    for m in messages:
        if rng.random() < 0.4:
            m["content"] += " " + " ".join(rng.choices(words, k=rng.randint(1, 6)))
    return messages


@pytest.mark.parametrize("fraction", [0.0, 1 / 64, 0.05, 0.3])
def test_each_request_of_a_growing_session_equals_the_plain_selection(fraction: float) -> None:
    for seed in range(3):
        messages = session(seed)
        engine = load("retrieval", context_length=BUDGET, recent_messages=6, sticky=False, min_group_fraction=fraction)
        rng = random.Random(seed)
        for end in range(10, len(messages) + 1):
            incoming = {"role": "user", "content": " ".join(rng.choices(["kangaroo", "cache", "file", "wombat"], k=2))}
            expected = plain_selection(messages[:end], incoming, min_group_fraction=fraction)
            found = engine.select_context(messages[:end], incoming_message=incoming, budget_tokens=BUDGET)
            assert found == expected, (seed, end)
            if found is not None:  # history rows come back as the very objects handed in
                assert all(any(r is m for m in messages) for r in found if "message_uid" in r)


def test_fresh_copies_and_shrinking_requests_give_the_same_selections() -> None:
    """Another host hands equal copies (state reused by content), and a compaction shortens the
    request (state rebuilt): the selections are the plain ones, built from the rows handed in."""
    messages = session(11)
    engine = load("retrieval", context_length=BUDGET, recent_messages=6, sticky=False)
    incoming = {"role": "user", "content": "kangaroo cache"}
    for end in [*range(20, 60, 3), 25, *range(26, 50, 4)]:
        request = copy.deepcopy(messages[:end])
        found = engine.select_context(request, incoming_message=incoming, budget_tokens=BUDGET)
        assert found == plain_selection(messages[:end], incoming)
        if found is not None:
            assert all(any(r is m for m in request) for r in found if "message_uid" in r)


def test_sticky_reuse_equals_the_key_based_rule_and_tolerates_shared_keys() -> None:
    """The sticky choice from group indices (same groups plus new ones) equals the rule by group
    keys, which an engine whose group table starts over on every request takes; groups that share
    a key (a repeated uid), or their whole document (uid and text), make the engine use the key
    rule and the plain ranking too."""
    for shared_keys in (False, "keys", "documents"):
        messages = session(5)
        first = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
        for i in range(12, len(messages), 9) if shared_keys else ():
            if messages[i].get("role") == "assistant":
                messages[i]["message_uid"] = messages[first]["message_uid"]
                if shared_keys == "documents":  # the same text too: one document key for two groups
                    messages[i]["content"] = messages[first]["content"]
                    messages[i + 1]["content"] = messages[first + 1]["content"]
        kept = load("retrieval", context_length=BUDGET, recent_messages=6)
        restarted = load("retrieval", context_length=BUDGET, recent_messages=6)
        for end in range(10, len(messages) + 1):
            incoming = {"role": "user", "content": "kangaroo migration" if end % 11 else "wombat token budget"}
            restarted._rows += 1  # type: ignore[attr-defined]  # forget the group table (a new epoch)
            a = kept.select_context(messages[:end], incoming_message=incoming, budget_tokens=BUDGET)
            b = restarted.select_context(messages[:end], incoming_message=incoming, budget_tokens=BUDGET)
            assert a == b, (shared_keys, end)
        assert kept.reselections == restarted.reselections
        assert 1 < kept.reselections < len(messages) - 10  # both paths were taken


@pytest.mark.parametrize("min_cost", [0, 1, 150, 600])
def test_group_table_extends_to_what_a_fresh_table_builds(min_cost: int) -> None:
    groups_module = _module(".groups")
    messages = tool_session(30, users=5)
    estimator = TokenEstimator()
    cum = [0]
    for m in messages:
        cum.append(cum[-1] + estimator.message(m))
    safe = [m.get("role") != "tool" for m in messages]

    def key_of(rows: list[dict[str, Any]], start: int, end: int) -> str:
        return f"{start}:{end}"

    table = groups_module.GroupTable()
    head = parts.head_end(messages)
    epochs = set()
    for recent in [head, head, 9, 9, 15, 15, 16, 40, 41, 44, 12, 30, len(messages)]:
        recent = max(head, parts.safe_cut_at_or_before(messages, recent)) if recent < len(messages) else recent
        table.update(messages, cum, safe, head, recent, rows=0, key_of=key_of, min_cost=min_cost)
        fresh = groups_module.GroupTable()
        fresh.update(messages, cum, safe, head, recent, rows=0, key_of=key_of, min_cost=min_cost)
        for field in ("starts", "ends", "keys", "costs", "opens_with_user", "closes_with_user", "end"):
            assert getattr(table, field) == getattr(fresh, field), (recent, field)
        assert table.cost_array().tolist() == table.costs
        # Groups tile [head, end) and each holds min_cost; what is left before recent holds less.
        assert table.starts == [head, *table.ends[:-1]] if table.starts else table.end == head
        assert all(cost >= min_cost for cost in table.costs)
        assert cum[recent] - cum[table.end] < max(min_cost, 1) or table.end == recent
        epochs.add(table.epoch)
    if not min_cost:
        assert len(epochs) == 2  # one rebuild: the recent block moved back (12 after 44)
    assert table.starts, "the table never held a group"


def test_greedy_fill_equals_the_python_loop() -> None:
    ranking = _module(".ranking")
    rng = random.Random(9)
    for _ in range(500):
        n = rng.randint(0, 40)
        costs = np.array([rng.choice([0, 1, 2, 3, 5, 8, 40, 100, 1000]) for _ in range(n)], dtype=np.int64)
        order = np.array(rng.sample(range(n), n), dtype=np.int64)
        fill = rng.choice([-5, 0, 1, 7, 50, 120, 400, 5000])
        expected, spent = [], 0
        for i in order.tolist():
            if spent + int(costs[i]) <= fill:
                expected.append(i)
                spent += int(costs[i])
        assert ranking.greedy_fill(order, costs, fill).tolist() == expected


def test_order_of_float32_scores_equals_the_rounded_python_sort() -> None:
    ranking = _module(".ranking")
    rng = random.Random(4)
    for _ in range(300):
        n = rng.randint(0, 50)
        pool = [0.0, 1e-10, 5e-10, 1.0, 1.0 + 2**-23, 2.5, 7.25, 3e-9, rng.random() * 20]
        single = np.array([rng.choice(pool) for _ in range(n)], dtype=np.float32)
        values = single.astype(np.float64)
        expected = sorted(range(n), key=lambda i: (-round(float(values[i]), 9), -i))
        assert ranking.order_by_score(values, single=single).tolist() == expected


def test_gap_markers_are_reused_until_changed_and_then_made_anew() -> None:
    """An unchanged marker comes back as the same object (a host recognises it as seen); one that
    somebody changed in place is replaced by a fresh one with the plain text, not sent as changed."""
    messages = session(5)
    incoming = {"role": "user", "content": "kangaroo cache"}
    engine = load("retrieval", context_length=BUDGET, recent_messages=6, sticky=False)
    first = engine.select_context(messages, incoming_message=incoming, budget_tokens=BUDGET)
    assert first is not None
    markers = [m for m in first if str(m.get("content")).startswith("[… ")]
    assert markers
    by_text: dict[tuple[str, str], dict[str, Any]] = {}
    for m in markers:  # two gaps of one kind share one marker object
        assert by_text.setdefault((m["role"], m["content"]), m) is m
    assert len(by_text) < len(markers)  # (the session has such a pair)
    again = engine.select_context(messages, incoming_message=incoming, budget_tokens=BUDGET)
    assert again is not None
    assert [id(m) for m in again] == [id(m) for m in first]
    markers[0]["content"] = "edited"
    third = engine.select_context(messages, incoming_message=incoming, budget_tokens=BUDGET)
    assert third == plain_selection(messages, incoming)
    assert all(m is not markers[0] for m in third)
