"""OpenAI rules (caching.md §2): 1,024 minimum, 128-token steps, free writes; GPT-5.6 breakpoints."""

from __future__ import annotations

from contextlab.cache.openai import OpenAIProfile, rounded_hit, uses_breakpoints
from contextlab.cache.profiles import Marker

from .helpers import conversation, msg, render


def test_128_token_steps_worked_example() -> None:
    assert rounded_hit(2006, 2006) == 1920  # the guide's example: prompt 2006 -> cached 1920
    assert rounded_hit(1023, 5000) == 0
    assert rounded_hit(1024, 5000) == 1024
    assert rounded_hit(1151, 5000) == 1024
    assert rounded_hit(1152, 5000) == 1152
    assert rounded_hit(3000, 1000) == 0  # prompts under 1,024 never cache


def test_prefix_mode_reads_longest_common_prefix_and_writes_free() -> None:
    p = OpenAIProfile("gpt-5.5")
    assert not p.uses_markers
    base = conversation(10)
    first = p.simulate(render(base, [300, 17, 400, 250, 120, 80, 60, 40, 30, 9]), [], 0.0)
    assert (first.read, first.write) == (0, 0)
    # Same first 6 messages (1167 tokens), then different content.
    second = render([*base[:6], msg("user", "new"), msg("assistant", "x")], [300, 17, 400, 250, 120, 80, 500, 500])
    result = p.simulate(second, [], 10.0)
    assert result.read == 1152 and result.write == 0 and result.uncached == result.total - 1152


def test_in_memory_retention_expires_after_idle_time() -> None:
    p = OpenAIProfile("gpt-4o", retention="in_memory", idle_ttl="5m")
    request = render(conversation(4), 500)
    p.simulate(request, [], 0.0)
    assert p.simulate(request, [], 299.0).read == 1920
    assert p.simulate(request, [], 299.0 + 301.0).read == 0
    assert OpenAIProfile("gpt-5.5").retention_s == 86400.0


def test_breakpoint_mode_exact_match_no_partial_fallback() -> None:
    assert uses_breakpoints("gpt-6.2-sol") and uses_breakpoints("gpt-5.6") and not uses_breakpoints("gpt-5.5")
    p = OpenAIProfile("gpt-6.2-sol")
    assert p.uses_markers
    base = conversation(6)
    r1 = p.simulate(render(base, 400), [], 0.0)
    assert (r1.read, r1.write) == (0, 2400)  # implicit breakpoint on the latest message, billed
    assert r1.write_by_ttl == {"30m": 2400}
    extended = p.simulate(render([*base, msg("user", "more")], 400), [], 1.0)
    assert extended.read == 2400 and extended.write == 400
    # Divergence in the last message: the earlier shared prefix was never a breakpoint -> 0 read.
    diverged = p.simulate(render([*base[:5], msg("assistant", "changed")], 400), [], 2.0)
    assert diverged.read == 0


def test_breakpoint_mode_explicit_marker_enables_partial_reuse() -> None:
    p = OpenAIProfile("gpt-6.2-sol")
    base = conversation(6)
    p.simulate(render(base, 400), [Marker(3)], 0.0)
    diverged = p.simulate(render([*base[:5], msg("assistant", "changed")], 400), [], 1.0)
    assert diverged.read == 1600


def test_breakpoint_mode_explicit_only_without_markers_caches_nothing() -> None:
    p = OpenAIProfile("gpt-6.2-sol", explicit_only=True)
    request = render(conversation(6), 400)
    assert p.simulate(request, [], 0.0).write == 0
    assert p.simulate(request, [], 1.0).read == 0
