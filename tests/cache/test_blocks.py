"""Block rendering: provider order, exact per-message totals, memo and prefix reuse equal fresh rendering."""

from __future__ import annotations

from contextlab.cache.blocks import BlockRenderer

from .helpers import msg

CALLS = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(3)]


def test_order_sections_and_exact_totals() -> None:
    tools = [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}]
    messages = [
        msg("system", "sys"),
        msg("user", "hello"),
        {"role": "assistant", "content": "let me look", "tool_calls": CALLS},
        *[{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(3)],
    ]
    request = BlockRenderer().render(messages, [5, 7, 30, 4, 4, 4], tools, 11, overhead_tokens=100)
    assert [b.section for b in request.blocks][:4] == ["tools", "tools", "system", "system"]
    assert request.blocks[2].kind == "overhead"
    kinds = [b.kind for b in request.blocks[4:]]
    assert kinds == [
        "text",
        "text",
        "tool_use",
        "tool_use",
        "tool_use",
        "tool_result",
        "tool_result",
        "tool_result",
    ]
    assert sum(b.tokens for b in request.blocks if b.message == 2) == 30
    assert request.cum_tokens[-1] == 11 + 100 + 5 + 7 + 30 + 12
    assert len(request.positions) == len(request.blocks) - 4  # two runs of three collapse to one each


def test_incremental_rendering_equals_fresh_rendering() -> None:
    history = [msg("system", "sys")]
    shared = BlockRenderer()
    for turn in range(6):
        history = [
            *history,
            msg("user", f"q{turn}"),
            {"role": "assistant", "content": "", "tool_calls": CALLS},
        ]
        history += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"r{turn}{i}"} for i in range(3)]
        if turn == 3:
            history = [history[0], msg("user", "summary"), *history[-5:]]  # a compaction rewrites the middle
        tokens = [10 + i for i in range(len(history))]
        reused = shared.render(history, tokens, [], 0)
        fresh = BlockRenderer().render(history, tokens, [], 0)
        assert reused.hashes == fresh.hashes
        assert reused.cum_tokens == fresh.cum_tokens
        assert reused.positions == fresh.positions
        assert reused.position_of == fresh.position_of


def test_key_order_matters_and_markers_do_not() -> None:
    a = BlockRenderer().render(
        [{"role": "user", "content": [{"type": "text", "text": "x", "k": 1, "j": 2}]}], [3], [], 0
    )
    b = BlockRenderer().render(
        [{"role": "user", "content": [{"type": "text", "text": "x", "j": 2, "k": 1}]}], [3], [], 0
    )
    c = BlockRenderer().render(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "x", "k": 1, "j": 2, "cache_control": {"type": "ephemeral"}}],
            }
        ],
        [3],
        [],
        0,
    )
    assert a.hashes != b.hashes
    assert a.hashes == c.hashes


def test_reasoning_content_is_hashed_but_takes_no_tokens() -> None:
    plain = {"role": "assistant", "content": "answer"}
    thinking = {**plain, "reasoning_content": "long private thoughts " * 50}
    a = BlockRenderer().render([plain], [20], [], 0)
    b = BlockRenderer().render([thinking], [20], [], 0)
    assert [x.kind for x in b.blocks] == ["thinking", "text"]
    assert [x.tokens for x in b.blocks] == [0, 20]
    assert a.hashes[-1] != b.hashes[-1]
