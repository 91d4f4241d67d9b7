"""lcm: immutable store, leaf passes and condensation, lossless recall tools returning JSON."""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

import pytest
from engine_helpers import load, tool_session

from contextlab.engines.parts import TokenEstimator
from contextlab.errors import EngineError
from contextlab.messages import UidMinter, content_text, stamp_identity, validate_messages


def compacted(**params: object):  # type: ignore[no-untyped-def]
    engine = load(
        "lcm",
        context_length=20_000,
        leaf_chunk_tokens=1_500,
        fresh_tail_count=8,
        leaf_target_tokens=300,
        condensed_target_tokens=300,
        **params,
    )
    messages = tool_session(60, users=3, lines=20)
    return engine, messages, engine.compress(messages)


def test_leaf_passes_and_condensation() -> None:
    engine, messages, result = compacted()
    assert result is not messages and validate_messages(result) == []
    nodes = [m for m in result if m.get("_lcm_node")]
    assert (nodes and result[-8:] == messages[-8:]) or len(result) < len(messages)
    depths = [engine.store.nodes[m["_lcm_node"]].depth for m in nodes]
    assert depths == sorted(depths, reverse=True)  # deepest first
    assert 1 in depths  # 4 leaves condensed into a depth-1 node
    assert "lcm_grep" in content_text(nodes[0])  # the usage note rides on the first summary row
    # Text parts: the host does not merge adjacent node rows into one (docs/host-loop.md).
    assert all(isinstance(m["content"], list) for m in nodes)
    assert all(n.id.startswith("sum_") and len(n.id) == 20 for n in engine.store.nodes.values())


def test_lossless_coverage_every_row_reachable_by_expand() -> None:
    engine, _messages, result = compacted()
    reachable: set[str] = set()
    frontier = [m["_lcm_node"] for m in result if m.get("_lcm_node")]
    while frontier:
        ident = frontier.pop()
        cursor: int | None = 0
        while cursor is not None:
            page = json.loads(engine.handle_tool_call("lcm_expand", {"id": ident, "cursor": cursor}))
            for item in page["items"]:
                if item["kind"] == "summary":
                    frontier.append(item["id"])
                else:
                    reachable.add(item["id"])
            cursor = page["next_cursor"]
    raw_in_context = {engine.store.row_for(m).store_id for m in result if not m.get("_lcm_node")}  # type: ignore[union-attr]
    assert reachable | raw_in_context == {r.store_id for r in engine.store.rows}


def test_grep_describe_expand_json() -> None:
    engine, _, _ = compacted()
    hits = json.loads(engine.handle_tool_call("lcm_grep", {"query": r"value_3_1\b"}))
    assert hits["total"] >= 1
    first = hits["matches"][0]
    assert first["kind"] == "message" and "value_3_1" in first["snippet"]
    assert first["covering_summary"].startswith("sum_")
    fts = json.loads(
        engine.handle_tool_call(
            "lcm_grep",
            {"query": "file line", "mode": "fts", "limit": 3, "sort": "relevance", "scope": "messages"},
        )
    )
    assert len(fts["matches"]) == 3
    described = json.loads(engine.handle_tool_call("lcm_describe", {"id": first["covering_summary"]}))
    assert described["kind"] == "summary" and described["text"]
    row = json.loads(engine.handle_tool_call("lcm_describe", {"id": first["id"]}))
    assert "value_3_1" in row["text"]
    assert "error" in json.loads(engine.handle_tool_call("lcm_grep", {"query": "("}))
    assert "error" in json.loads(engine.handle_tool_call("lcm_expand", {"id": "sum_nope"}))
    assert "error" in json.loads(engine.handle_tool_call("no_such_tool", {}))
    # Deterministic ordering: the same call gives byte-identical JSON.
    assert engine.handle_tool_call("lcm_grep", {"query": "file"}) == engine.handle_tool_call(
        "lcm_grep", {"query": "file"}
    )


def test_small_backlog_is_left_alone() -> None:
    engine = load("lcm", context_length=200_000)
    messages = tool_session(10)
    assert engine.compress(messages) is messages


def test_second_pass_keeps_the_summary_prefix() -> None:
    engine, _messages, first = compacted(condensation_fanin=50)
    grown = first + tool_session(30, lines=20)[1:]
    second = engine.compress(grown)
    old_nodes = [m for m in first if m.get("_lcm_node")]
    assert second[: len(old_nodes)] == old_nodes  # leaf passes append after the old summaries


def test_large_output_stub_in_tail() -> None:
    engine = load("lcm", context_length=20_000, leaf_chunk_tokens=1_500, fresh_tail_count=4, large_output_chars=200)
    result = engine.compress(tool_session(40, lines=20))
    stubs = [m for m in result if str(m.get("content", "")).startswith("[large tool output stored as m")]
    assert stubs
    ref = stubs[0]["content"].split()[5].rstrip(":")
    assert json.loads(engine.handle_tool_call("lcm_expand", {"id": ref}))["items"][0]["text"].startswith("file")


def test_literal_search_matches_the_regex_search() -> None:
    """A search for an escaped literal (the fast path: one pass over the joined ASCII rows) answers
    exactly as the same pattern run through the regex engine (a group makes it a non-literal
    regex), ASCII or not, also for rows stored after the first search."""
    engine = load("lcm", context_length=200_000)
    messages = tool_session(24, lines=6)
    messages[3]["content"] += "\nVALUE_1_2 again value_1_2, Value_1_2. a.b.c a.b.c"
    messages[5]["content"] += "\nſtate KELVIN Kelvin \u212aelvin value_1_2 naïve a.b.c"  # long s, Kelvin sign
    messages[6]["content"] += "\n\u0130nfo \u0131nfo, Info → info ✓"  # dotted and dotless I
    messages[7]["content"] += "\naaaa aaa"
    messages[9]["content"] = ""  # an empty row between two others
    messages[30]["content"] += "\x00value_1_2\x00aa"  # NUL inside a row (the fast path's separator)
    messages[33]["content"] += "\nvalue_1_2 ends the row: value_1_2"
    messages[35]["content"] += "\nnaïve again: VALUE_1_2 \u212aelvin a.b.c"  # a non-ASCII row stored later
    literals = [
        "value_1_2",
        "VALUE_1",
        "a.b.c",
        "state",
        "kelvin",
        "aa",
        "file 3 line",
        "naïve",
        "zzz",
        "2\x00aa",
        "info",
    ]
    totals = []
    for stored in (28, len(messages)):  # a first store, then rows added after searches ran
        engine.store.ingest(messages[:stored])
        for literal in literals:
            for mode_args in ({}, {"scope": "messages", "sort": "relevance", "limit": 50}):
                fast = json.loads(engine.handle_tool_call("lcm_grep", {"query": re.escape(literal), **mode_args}))
                slow = json.loads(
                    engine.handle_tool_call("lcm_grep", {"query": f"(?:{re.escape(literal)})", **mode_args})
                )
                assert fast["matches"] == slow["matches"] and fast["total"] == slow["total"], (stored, literal)
                totals.append(fast["total"])
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "kelvin", "limit": 50}))["total"] == 2
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "aa", "limit": 50}))["total"] == 2
    info = json.loads(engine.handle_tool_call("lcm_grep", {"query": "info", "limit": 50, "sort": "relevance"}))
    assert [match["id"] for match in info["matches"]] == [engine.store.by_uid[messages[6]["message_uid"]].store_id]
    assert (
        json.loads(engine.handle_tool_call("lcm_grep", {"query": "value_1_2", "limit": 50}))["total"] == 6
    )  # and a tool result
    assert len(set(totals)) > 3  # the searches found different numbers of rows


def test_a_recency_search_returns_the_newest_matches_and_counts_every_one() -> None:
    """By recency a search lists the newest matching rows first, up to ``limit``, and ``total``
    counts every matching row; the summaries rank after every message (checked against a scan of
    the stored texts, for a literal and for a regex, ASCII rows and not)."""
    engine, _messages, _compressed = compacted()
    store = engine.store
    store.ingest([{"role": "user", "content": f"naïve line {k}", "message_uid": f"u-extra-{k}"} for k in range(3)])
    for query in ("line", r"line \d"):
        pattern = re.compile(query, re.IGNORECASE)
        rows = [row.store_id for row in store.rows if pattern.search(row.text)]
        nodes = [node_id for node_id in store.order if pattern.search(store.nodes[node_id].text)]
        assert len(rows) > 4, query
        for scope, expected in (("messages", rows[::-1]), ("both", nodes[::-1] + rows[::-1])):
            found = json.loads(engine.handle_tool_call("lcm_grep", {"query": query, "limit": 4, "scope": scope}))
            assert found["total"] == len(expected), (query, scope)
            assert [match["id"] for match in found["matches"]] == expected[:4], (query, scope)


def test_word_search_finds_the_rows_holding_every_word() -> None:
    """A word search (mode fts) lists the rows that hold every word case-insensitively (as a
    case-insensitive ``re`` literal matches: lookalikes of ASCII letters count), counts the sum of
    the words' matches for a relevance order, and cuts its snippet around the first word's first
    match; checked against a scan of every stored row, also for rows stored after the first search."""
    engine = load("lcm", context_length=200_000)
    messages = tool_session(24, lines=6)
    messages[4]["content"] += "\nthe \u0130nfo line: FILE \u2192 \u212aeep"
    messages[8]["content"] += "\nſtate of the file, info kept"
    messages[30]["content"] += "\nna\u00efve info \u2713"
    for stored in (26, len(messages)):
        engine.store.ingest(messages[:stored])
        for query in ("info", "file line", "LINE keep", "state file", "zzz line", "line line"):
            terms = re.findall(r"\w+", query.lower())
            patterns = [re.compile(re.escape(term), re.IGNORECASE) for term in terms]
            expected = []
            for position, row in enumerate(engine.store.rows):
                if all(pattern.search(row.text) for pattern in patterns):
                    count = sum(len(pattern.findall(row.text)) for pattern in patterns)
                    expected.append((count, position, row.store_id, patterns[0].search(row.text).start()))
            for sort, order in (("recency", lambda e: -e[1]), ("relevance", lambda e: (-e[0], -e[1]))):
                args = {"query": query, "mode": "fts", "scope": "messages", "sort": sort, "limit": 5}
                found = json.loads(engine.handle_tool_call("lcm_grep", args))
                best = sorted(expected, key=order)[:5]
                assert found["total"] == len(expected), (stored, query)
                assert [match["id"] for match in found["matches"]] == [e[2] for e in best], (stored, query, sort)
                for match, (_count, position, _id, start) in zip(found["matches"], best, strict=True):
                    text = engine.store.rows[position].text
                    assert match["snippet"] in text.replace("\n", " "), (query, match["snippet"])
                    assert start - len(match["snippet"]) < text.replace("\n", " ").find(match["snippet"]) <= start
    info = json.loads(engine.handle_tool_call("lcm_grep", {"query": "info", "mode": "fts", "scope": "messages"}))
    assert info["total"] == 3  # a dotted capital I is an i


def test_literal_corpus_answers_as_a_search_of_every_text() -> None:
    """The store's incremental literal search (chunks merged as texts arrive, each needle's hits
    kept, and extended for every kept needle at once when one is searched again) gives, after every
    batch, what a case-insensitive ``re`` search of every text gives, non-ASCII texts and ASCII
    lookalikes (dotted and dotless I, long s, Kelvin sign) included: position and first start, and
    on demand the non-overlapping count."""
    rng = random.Random(7)
    corpus = type(load("lcm", context_length=200_000).store._row_corpus)()
    alphabet = [
        "ab",
        "a",
        "b",
        "ba",
        "AB",
        "x",
        " ",
        "\n",
        "é",
        "Ab",
        "\u0130",
        "\u0131",
        "\u017f",
        "\u212a",
        "i",
        "sk",
        "→",
    ]
    texts: list[str] = []
    needles = ["ab", "aba", "bab", "abab", "b a", "x", "ab\nab", "zz", "i", "is", "sk", "kab", "a i"]
    for _batch in range(40):
        new = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(rng.randrange(0, 9))]
        texts += new
        corpus.extend(new)
        for needle in rng.sample(needles, 5):
            pattern = re.compile(re.escape(needle), re.IGNORECASE)
            first = [(p, pattern.search(text)) for p, text in enumerate(texts)]
            expected = [(p, match.start()) for p, match in first if match]
            assert corpus.hits(needle) == expected, (len(texts), needle)
            counts = [corpus.count(needle, p) for p, _at in expected]
            assert counts == [len(pattern.findall(texts[p])) for p, _at in expected], (len(texts), needle)
    assert any(not text.isascii() for text in texts)
    assert len(corpus._chunks) <= 2 * len(texts).bit_length()  # merged as it grew, never one per batch


def test_literal_corpus_catches_up_every_needle_once() -> None:
    """A needle first searched after texts arrived already holds their hits: when another needle's
    repeat search reads those texts for every kept needle, it is not given them twice."""
    corpus = type(load("lcm", context_length=200_000).store._row_corpus)()
    corpus.extend(["alpha beta", "beta"])
    assert corpus.hits("alpha") == [(0, 0)]
    corpus.extend(["beta alpha", "gamma alpha alpha"])
    assert corpus.hits("beta") == [(0, 6), (1, 0), (2, 0)]  # a first search reads every text
    corpus.extend(["beta beta gamma"])
    assert corpus.hits("alpha") == [(0, 0), (2, 5), (3, 6)]  # both needles caught up from text 2
    assert corpus.hits("beta") == [(0, 6), (1, 0), (2, 0), (4, 0)]
    assert corpus.hits("gamma") == [(3, 0), (4, 10)]
    assert [corpus.count("alpha", 3), corpus.count("beta", 4)] == [2, 2]


def test_searching_a_store_leaves_it_equal_to_one_never_searched() -> None:
    searched, untouched = load("lcm", context_length=200_000), load("lcm", context_length=200_000)
    messages = tool_session(12, lines=4)
    searched.store.ingest(messages)
    untouched.store.ingest(messages)
    json.loads(searched.handle_tool_call("lcm_grep", {"query": "line"}))
    assert searched.store == untouched.store


def test_summary_search_of_a_literal_matches_the_regex_search() -> None:
    """Searching the summaries for a literal (the incremental path) answers as the regex does, also
    after a later pass added summaries."""
    engine, _messages, _compressed = compacted()
    rng = random.Random(3)
    for round_ in range(2):
        if round_:
            engine.compress(tool_session(120, users=6, lines=20))
        texts = [engine.store.nodes[node_id].text for node_id in engine.store.order]
        assert texts
        # Pieces of the summaries (some shared by several, some by one) and a text in none.
        literals = [text[at : at + size] for text in rng.sample(texts, 2) for at, size in ((0, 6), (40, 12))]
        literals = [literal for literal in literals if "\\" not in literal] + ["zzz"]
        for literal in literals:
            for args in ({"scope": "summaries", "limit": 100}, {"sort": "relevance", "limit": 7}):
                fast = json.loads(engine.handle_tool_call("lcm_grep", {"query": re.escape(literal), **args}))
                slow = json.loads(engine.handle_tool_call("lcm_grep", {"query": f"(?:{re.escape(literal)})", **args}))
                assert fast == {**slow, "query": fast["query"]}, (round_, literal)
        found = json.loads(engine.handle_tool_call("lcm_grep", {"query": re.escape(literals[0]), "scope": "summaries"}))
        assert found["total"] > 0 and all(m["kind"] == "summary" for m in found["matches"])


def test_covering_map_follows_new_nodes() -> None:
    """The cached store-id → leaf map equals a from-scratch one after every pass adds nodes."""
    engine, _messages, result = compacted(condensation_fanin=50)
    store = engine.store

    def from_scratch() -> dict[str, str]:
        out: dict[str, str] = {}
        for node_id in store.order:
            for source in store.nodes[node_id].source_ids:
                out.setdefault(source, node_id)
        return out

    assert store.covering() == from_scratch() and store.covering()
    before = dict(store.covering())
    engine.compress(result + tool_session(30, lines=20)[1:])
    assert store.covering() == from_scratch() and store.covering() != before
    # A node added by hand after the map was read, then one replaced in its place (same id).
    node_type = type(store.nodes[store.order[0]])
    first_row = store.rows[0].store_id

    def node(name: str, sources: list[str]) -> Any:
        return node_type(name, 0, name, sources, [], (0, 0), 1, "", "leaf")

    store.add_node(node("sum_extra", [first_row, "m_unseen"]))
    assert store.covering() == from_scratch() and store.covering()["m_unseen"] == "sum_extra"
    store.add_node(node(store.order[0], ["m_other"]))
    assert store.covering() == from_scratch() and store.covering()["m_other"] == store.order[0]


# ---------------------------------------------------------------------- assembly budget


def long_session_engine(**params: object):  # type: ignore[no-untyped-def]
    return load(
        "lcm",
        context_length=10_000,
        leaf_chunk_tokens=1_500,
        fresh_tail_count=8,
        leaf_target_tokens=300,
        condensed_target_tokens=300,
        **params,
    )


def turn(index: int, calls: int = 4, lines: int = 12) -> list[dict[str, object]]:
    """One user message and ``calls`` tool calls with texts and ids unique to ``index``."""
    rows: list[dict[str, object]] = [{"role": "user", "content": f"task {index}: check module_{index}"}]
    for c in range(calls):
        call_id = f"call_{index}_{c}"
        rows.append(
            {
                "role": "assistant",
                "content": f"Reading part {c} of module_{index}.",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{index}_{c}.py"})},
                    }
                ],
            }
        )
        body = "\n".join(f"module {index} part {c} line {k}: marker_{index}_{c}_{k}" for k in range(lines))
        rows.append({"role": "tool", "tool_call_id": call_id, "content": body})
    return rows


def run_long_session(engine, turns: int = 200):  # type: ignore[no-untyped-def]
    """A host loop in miniature: append a turn, compress whenever the history reaches the threshold.
    Returns the history and, per compaction, (turn, tokens after)."""
    estimator = TokenEstimator()
    minter = UidMinter(3)
    history: list[dict[str, object]] = []
    log: list[tuple[int, int]] = []
    for index in range(turns):
        start = len(history)
        history = [*history, *turn(index)]
        stamp_identity(history, minter, start)  # type: ignore[arg-type]
        engine.on_turn_complete(history)
        if engine.should_compress(estimator.messages(history)):
            history = engine.compress(history, current_tokens=estimator.messages(history))
            log.append((index, estimator.messages(history)))
    return history, log


def test_long_session_reaches_a_steady_state_under_the_threshold() -> None:
    """With max_depth=1 the depth-1 summaries are never condensed: without a budget they piled up
    until they alone kept the request over the threshold and every request compacted. Now each
    compaction ends within the budget, under the threshold, and compactions stay spaced."""
    engine = long_session_engine()
    estimator = TokenEstimator()
    history, log = run_long_session(engine)
    assert len(log) >= 15 and engine.evicted  # long enough for the budget to bind
    budget = engine.assembly_budget()
    assert budget is not None and budget < engine.threshold_tokens
    assert all(tokens <= budget for _, tokens in log)
    assert not engine.should_compress(max(tokens for _, tokens in log))
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(log)]
    assert min(gaps[-10:]) >= 2  # late in the session as early: never a compaction per turn
    assert estimator.messages(history) < engine.threshold_tokens
    shown = [m["_lcm_node"] for m in history if m.get("_lcm_node")]
    assert shown and not set(shown) & set(engine.evicted)
    assert "lcm_grep" in content_text(next(m for m in history if m.get("_lcm_node")))  # note on the first kept


def test_left_out_summaries_stay_reachable_by_the_tools() -> None:
    engine = long_session_engine()
    history, _log = run_long_session(engine)
    evicted = engine.evicted
    assert evicted
    # Every stored row is still reachable: raw in context, or by expanding a node (shown or left out).
    reachable: set[str] = set()
    frontier = [*evicted, *(m["_lcm_node"] for m in history if m.get("_lcm_node"))]
    while frontier:
        page = json.loads(engine.handle_tool_call("lcm_expand", {"id": frontier.pop(), "max_tokens": 100_000}))
        for item in page["items"]:
            (frontier.append if item["kind"] == "summary" else reachable.add)(item["id"])
    raw = {engine.store.row_for(m).store_id for m in history if not m.get("_lcm_node")}  # type: ignore[union-attr]
    assert reachable | raw == {r.store_id for r in engine.store.rows}
    # A marker of the first turn, long out of the context, is found by grep and read by expand.
    assert "marker_0_1_3" not in json.dumps(history)
    hits = json.loads(engine.handle_tool_call("lcm_grep", {"query": r"marker_0_1_3\b"}))
    assert hits["total"] == 1 and hits["matches"][0]["covering_summary"] in engine.store.nodes
    cover = hits["matches"][0]["covering_summary"]
    described = json.loads(engine.handle_tool_call("lcm_describe", {"id": evicted[0]}))
    assert described["kind"] == "summary" and described["text"]
    assert cover in evicted or engine.store.top(cover) in evicted


def test_fresh_tail_is_never_left_out() -> None:
    """A budget too small for anything leaves every summary out, never the newest rows."""
    engine = long_session_engine(max_assembly_tokens=1)
    messages = tool_session(60, users=3, lines=20)
    result = engine.compress(messages)
    assert validate_messages(result) == []
    assert not any(m.get("_lcm_node") for m in result) and engine.evicted
    assert result[-1] is messages[-1] and result[-2] is messages[-2]  # the newest call and its result
    assert all(n in engine.store.nodes for n in engine.evicted)


def test_budget_never_binds_on_a_short_session() -> None:
    """Where summaries fit, the result is the one without a budget (no summary left out)."""
    plain, _messages, result = compacted()
    assert not plain.evicted
    budget = plain.assembly_budget()
    assert budget is not None and TokenEstimator().messages(result) <= budget


def test_assembly_budget_parameter() -> None:
    engine = load("lcm", context_length=128_000)
    assert engine.assembly_budget() == 96_000 - 20_000  # threshold less one leaf chunk
    assert engine.assembly_budget(5_000) == 96_000 - 5_000 - 20_000  # less the request's overhead
    small = load("lcm", context_length=8_000)
    assert small.assembly_budget() == 6_000 - 1_500  # headroom at most a quarter of the threshold
    capped = load("lcm", context_length=128_000, max_assembly_tokens=30_000)
    assert capped.assembly_budget() == 30_000
    assert load("lcm", context_length=0).assembly_budget() is None
    with pytest.raises(EngineError, match="max_assembly_tokens"):
        load("lcm", max_assembly_tokens=0)
