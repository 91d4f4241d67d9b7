"""lcm: immutable store, leaf passes and condensation, lossless recall tools returning JSON."""

from __future__ import annotations

import json
import re

from engine_helpers import load, tool_session

from contextlab.messages import validate_messages


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
    assert "lcm_grep" in nodes[0]["content"]  # the usage note rides on the first summary row
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
    """A search for an escaped literal (the fast path over ASCII rows) answers exactly as the same
    pattern run through the regex engine (a group makes it a non-literal regex), ASCII or not."""
    engine = load("lcm", context_length=200_000)
    messages = tool_session(12, lines=6)
    messages[3]["content"] += "\nVALUE_1_2 again value_1_2, Value_1_2. a.b.c a.b.c"
    messages[5]["content"] += "\nſtate KELVIN Kelvin \u212aelvin value_1_2 naïve a.b.c"  # long s, Kelvin sign
    messages[7]["content"] += "\naaaa aaa"
    engine.store.ingest(messages)
    for literal in ["value_1_2", "VALUE_1", "a.b.c", "state", "kelvin", "aa", "file 3 line", "naïve", "zzz"]:
        for mode_args in ({}, {"scope": "messages", "sort": "relevance", "limit": 50}):
            fast = engine.handle_tool_call("lcm_grep", {"query": re.escape(literal), **mode_args})
            slow = engine.handle_tool_call("lcm_grep", {"query": f"(?:{re.escape(literal)})", **mode_args})
            assert json.loads(fast)["matches"] == json.loads(slow)["matches"], literal
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "kelvin", "limit": 50}))["total"] == 1
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "aa", "limit": 50}))["total"] == 1


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
