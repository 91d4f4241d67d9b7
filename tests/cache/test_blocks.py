"""Block rendering: provider order, exact per-message totals, memo and prefix reuse equal fresh rendering."""

from __future__ import annotations

import random
from typing import Any

from contextlab.cache.blocks import RUN_KINDS, BlockRenderer

from .helpers import msg, plain_prefix_keys

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
    assert sum(b.tokens for i, b in enumerate(request.blocks) if request.message_of(i) == 2) == 30
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


def _reference_keys_and_positions(blocks: list[Any]) -> tuple[list[bytes], list[int], list[int]]:
    """Prefix keys and lookback positions computed block by block, the plain way."""
    positions: list[int] = []
    position_of: list[int] = []
    keys = plain_prefix_keys([block.digest for block in blocks])
    for i, block in enumerate(blocks):
        if i and block.kind in RUN_KINDS and blocks[i - 1].kind == block.kind:
            positions[-1] = i
        else:
            positions.append(i)
        position_of.append(len(positions) - 1)
    return keys, positions, position_of


def test_moved_and_reselected_rows_render_like_fresh_requests() -> None:
    # An engine that selects rows: each request is some of the pool's very objects, in another
    # order, with repeats, sometimes sharing a head with the previous request.
    rng = random.Random(7)
    pool: list[dict[str, Any]] = [
        msg("user", f"question {i}")
        if i % 4 == 0
        else {"role": "assistant", "content": "", "tool_calls": CALLS}
        if i % 4 == 1
        else {"role": "tool", "tool_call_id": "c0", "content": f"result {i}"}
        if i % 4 == 2
        else {"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}, {"type": "image"}]}
        for i in range(40)
    ]
    system = msg("system", "static part. volatile part")
    renderer = BlockRenderer()
    previous: list[dict[str, Any]] = []
    previous_tokens: list[int] = []
    for step in range(60):
        shared = rng.randrange(len(previous) + 1) if previous and step % 3 else 0
        rows = previous[1:shared] + rng.sample(pool, rng.randrange(1, 25)) + [rng.choice(pool)] * rng.randrange(2)
        if step % 7 == 0:
            rows.append(msg("user", f"fresh {step}"))  # a new object
        messages = [system, *rows]
        # Counts change now and then (not inside a shared head: the host shares only equal rows).
        tokens = previous_tokens[:shared] + [len(str(m)) % 50 + (step % 5 == 0) for m in messages[shared:]]
        split = 12 if step % 4 else None
        reused = renderer.render(
            messages, tokens, [], 0, system_split=split, shared_messages=shared, history_rows=rng.choice([0, 5, 40])
        )
        fresh = BlockRenderer().render(messages, tokens, [], 0, system_split=split)
        assert reused.blocks == fresh.blocks
        assert reused.message_ends == fresh.message_ends
        owners = [i for i, end in enumerate(fresh.message_ends) for _ in range(end + 1 - fresh.message_start(i))]
        assert [reused.message_of(b) for b in range(len(reused.blocks))] == owners
        assert (reused.cum_tokens, reused.cum_chars) == (fresh.cum_tokens, fresh.cum_chars)
        assert reused.first_image == fresh.first_image
        keys, positions, position_of = _reference_keys_and_positions(fresh.blocks)
        assert reused.hashes == fresh.hashes == keys
        assert reused.positions == fresh.positions == positions
        assert reused.position_of == fresh.position_of == position_of
        previous, previous_tokens = messages, tokens
