"""Anthropic rules from the documented examples (caching.md §1, §8.7)."""

from __future__ import annotations

import pytest

from contextlab.cache.anthropic import AnthropicProfile, min_cacheable_tokens
from contextlab.cache.policies import Automatic
from contextlab.cache.profiles import Marker
from contextlab.errors import ConfigError

from .helpers import conversation, msg, render


def profile(**options: object) -> AnthropicProfile:
    options.setdefault("min_tokens", 1000)
    return AnthropicProfile("claude-sonnet-4-5", **options)  # type: ignore[arg-type]


def last(request_len: int, ttl: str = "5m") -> list[Marker]:
    return [Marker(request_len - 1, ttl)]


def test_lookback_worked_example_a7() -> None:
    """T1 writes@10; T2 hits@10 and writes@15; T3 (35 blocks, one breakpoint) misses; a second
    breakpoint on 15 would hit."""
    p = profile()
    blocks = conversation(35)
    r1 = p.simulate(render(blocks[:10]), last(10), 0.0)
    assert (r1.read, r1.write) == (0, 1000)
    r2 = p.simulate(render(blocks[:15]), last(15), 1.0)
    assert (r2.read, r2.write) == (1000, 500)
    r3 = p.simulate(render(blocks[:35]), last(35), 2.0)
    assert r3.read == 0 and r3.write == 3500
    p2 = profile()
    p2.simulate(render(blocks[:10]), last(10), 0.0)
    p2.simulate(render(blocks[:15]), last(15), 1.0)
    r3b = p2.simulate(render(blocks[:35]), [Marker(14), Marker(34)], 2.0)
    assert r3b.read == 1500


def test_lookback_counts_twenty_positions_including_the_breakpoint() -> None:
    blocks = conversation(40)
    p = profile()
    p.simulate(render(blocks[:10]), last(10), 0.0)
    # Breakpoint on block 29 (index): 29..10 is 20 positions: index 9 is the 21st -> miss.
    assert p.simulate(render(blocks[:30]), last(30), 1.0).read == 0
    p = profile()
    p.simulate(render(blocks[:10]), last(10), 0.0)
    assert p.simulate(render(blocks[:29]), last(29), 1.0).read == 1000


def test_tool_result_runs_count_as_one_position() -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(25)]
    head = [msg("user", "go"), msg("assistant", "sure")]
    turn = [{"role": "assistant", "content": None, "tool_calls": calls}] + [
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"r{i}"} for i in range(25)
    ]
    p = profile(min_tokens=1)
    p.simulate(render(head), last(2), 0.0)
    request = render(head + turn, 10)
    assert len(request.blocks) == 2 + 25 + 25
    assert len(request.positions) == 4  # user, assistant, the tool_use run, the tool_result run
    assert p.simulate(request, last(len(request.blocks)), 1.0).read == 20
    # Without collapsing runs the previous write is 50 blocks back: miss.
    q = profile(min_tokens=1, collapse_runs=False)
    q.simulate(render(head), last(2), 0.0)
    assert q.simulate(render(head + turn, 10), last(52), 1.0).read == 0


def test_volatile_last_block_never_reads_a8() -> None:
    p = profile()
    base = conversation(12)
    for t in range(3):
        request = render([*base, msg("user", f"timestamp {t}")])
        result = p.simulate(request, last(13), float(t))
        assert result.read == 0


def test_minimum_cacheable_length_no_error_no_caching() -> None:
    p = AnthropicProfile("claude-opus-4-6")  # 4096
    assert p.min_tokens == 4096 == min_cacheable_tokens("claude-opus-4-6-20260205")
    short = render(conversation(4), 1000)  # 4000 tokens < 4096
    r = p.simulate(short, last(4), 0.0)
    assert (r.read, r.write, r.uncached) == (0, 0, 4000)
    again = p.simulate(short, last(4), 1.0)
    assert (again.read, again.write) == (0, 0)
    assert min_cacheable_tokens("claude-opus-5-5") == 512
    assert min_cacheable_tokens("claude-haiku-4-5") == 4096
    assert min_cacheable_tokens("claude-opus-4-7") == 2048


def test_ttl_expiry_and_refresh_on_read() -> None:
    p = profile()
    blocks = conversation(12)
    p.simulate(render(blocks[:10]), last(10), 0.0)
    assert p.simulate(render(blocks[:11]), last(11), 299.0).read == 1000  # refreshes both
    # 5 minutes after the last use (299 s) the entries written or refreshed then expire.
    assert p.simulate(render(blocks[:12]), last(12), 299.0 + 300.0).read == 0
    q = profile()
    q.simulate(render(blocks[:10]), last(10, "1h"), 0.0)
    assert q.simulate(render(blocks[:11]), last(11, "1h"), 3599.0).read == 1000
    r = profile()
    r.simulate(render(blocks[:10]), last(10, "1h"), 0.0)
    assert r.simulate(render(blocks[:11]), last(11, "1h"), 3600.0).read == 0


def test_parallel_requests_miss_until_the_first_response_begins() -> None:
    p = profile(min_tokens=1)
    p.ttft = p.store.ttft = 2.0
    blocks = conversation(10)
    p.simulate(render(blocks), last(10), 0.0)
    assert p.simulate(render(blocks), last(10), 1.0).read == 0
    assert p.simulate(render(blocks), last(10), 3.0).read == 1000


def test_mixed_ttl_billing_a11() -> None:
    p = profile()
    blocks = conversation(30)
    p.simulate(render(blocks[:10]), last(10), 0.0)
    result = p.simulate(render(blocks[:30]), [Marker(9, "1h"), Marker(19, "1h"), Marker(29, "5m")], 1.0)
    # A = 1000 read; B = 2000 (last 1h breakpoint); C = 3000.
    assert result.read == 1000
    assert result.write_by_ttl == {"1h": 1000, "5m": 1000}
    assert result.uncached == 0
    with pytest.raises(ConfigError):
        p.simulate(render(blocks[:30]), [Marker(9, "5m"), Marker(19, "1h")], 2.0)


def test_more_than_four_breakpoints_is_a_400() -> None:
    with pytest.raises(ConfigError, match="maximum of 4"):
        profile().simulate(render(conversation(10)), [Marker(i) for i in range(5)], 0.0)


def test_tools_change_invalidates_everything_system_change_keeps_tools() -> None:
    tools = [{"type": "function", "function": {"name": f"t{i}", "parameters": {}}} for i in range(3)]
    other = [*tools[:2], {"type": "function", "function": {"name": "t2", "parameters": {"x": 1}}}]
    system = [msg("system", "sys A"), *conversation(5)]
    p = profile()
    req = render(system, 200, tools=tools, tools_tokens=1500)
    p.simulate(req, [Marker(2), Marker(len(req.blocks) - 1)], 0.0)
    changed = render(system, 200, tools=other, tools_tokens=1500)
    assert p.simulate(changed, [Marker(2), Marker(len(changed.blocks) - 1)], 1.0).read == 0
    q = profile()
    q.simulate(req, [Marker(2), Marker(len(req.blocks) - 1)], 0.0)
    new_system = render([msg("system", "sys B"), *conversation(5)], 200, tools=tools, tools_tokens=1500)
    assert q.simulate(new_system, [Marker(2), Marker(len(new_system.blocks) - 1)], 1.0).read == 1500


def test_automatic_caching_three_request_table() -> None:
    """Req 2 reads System..User(2) and writes Asst(2)+User(3) (the docs' automatic-caching table)."""
    p = profile(min_tokens=1)
    policy = Automatic()
    history = [msg("system", "S"), msg("user", "u1"), msg("assistant", "a1"), msg("user", "u2")]
    r1 = render(history)
    p.simulate(r1, policy.markers(r1, history), 0.0)
    history2 = [*history, msg("assistant", "a2"), msg("user", "u3")]
    r2 = render(history2)
    result = p.simulate(r2, policy.markers(r2, history2), 1.0)
    assert result.read == 400 and result.write == 200 and result.uncached == 0


def test_usage_invariant_total_is_read_plus_write_plus_uncached() -> None:
    p = profile()
    request = render(conversation(20), 100)
    result = p.simulate(request, [Marker(9)], 0.0)
    assert result.read + result.write + result.uncached == result.total == 2000
    assert (result.write, result.uncached) == (1000, 1000)


def test_adding_an_image_anywhere_invalidates_the_messages_layer_only() -> None:
    p = profile()
    head = [msg("system", "s"), *conversation(9)]
    request = render(head, 200)
    p.simulate(request, [Marker(0), Marker(9)], 0.0)
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}
    with_image = render([*head, image], 200)
    result = p.simulate(with_image, [Marker(0), Marker(9), Marker(10)], 1.0)
    assert result.read == 0  # the system block alone (200 tokens) is under the minimum, messages missed
    q = profile(min_tokens=100)
    q.simulate(request, [Marker(0), Marker(9)], 0.0)
    assert q.simulate(with_image, [Marker(0), Marker(9), Marker(10)], 1.0).read == 200
