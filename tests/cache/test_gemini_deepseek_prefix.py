"""Gemini implicit, DeepSeek disk units (D3 sequence), and the plain prefix model."""

from __future__ import annotations

import pytest

from contextlab.cache.deepseek import DeepSeekProfile
from contextlab.cache.gemini import GeminiProfile, min_implicit_tokens
from contextlab.cache.prefix import PrefixProfile
from contextlab.errors import ConfigError

from .helpers import conversation, msg, render


def test_gemini_minimum_and_granularity() -> None:
    assert min_implicit_tokens("google/gemini-3-pro-preview") == 4096
    assert min_implicit_tokens("gemini-2.5-flash") == 2048
    p = GeminiProfile("gemini-2.5-flash", granularity=512)
    base = conversation(8)
    p.simulate(render(base, 300), [], 0.0)
    assert p.simulate(render(base[:6], 300), [], 1.0).read == 0  # 1800 < 2048
    hit = p.simulate(render([*base, msg("user", "x")], 300), [], 2.0)
    assert hit.read == 2048  # 2400 floored to 512s
    assert hit.write == 0


def test_gemini_hit_probability_is_deterministic() -> None:
    def run(seed: int) -> list[int]:
        p = GeminiProfile("gemini-2.5-flash", hit_prob=0.5, seed=seed)
        base = conversation(40)
        return [p.simulate(render(base[: 10 + i], 300), [], float(i)).read for i in range(20)]

    assert run(1) == run(1)
    hits = sum(1 for r in run(1) if r)
    assert 0 < hits < 19
    with pytest.raises(ConfigError):
        GeminiProfile(hit_prob=1.5)


def test_deepseek_worked_sequence_d3() -> None:
    a, b, c, d = (msg("user", "A"), msg("assistant", "B"), msg("user", "C"), msg("assistant", "D"))
    p = DeepSeekProfile(interval=10_000)
    p.simulate(render([a, b], 100), [], 0.0)
    assert p.simulate(render([a, b, c], 100), [], 10.0).read == 200  # hit on A+B
    q = DeepSeekProfile(interval=10_000)
    q.simulate(render([a, b], 100), [], 0.0)
    assert q.simulate(render([a, c], 100), [], 10.0).read == 0  # miss, but A is now a unit
    assert q.simulate(render([a, d], 100), [], 20.0).read == 100  # hit on A


def test_deepseek_interval_units_and_legacy() -> None:
    p = DeepSeekProfile(interval=64)
    p.simulate(render([msg("user", "A"), msg("assistant", "B")], 100), [], 0.0)
    # A+C: A's boundary crossed 64 -> an interval unit of 64 tokens.
    assert p.simulate(render([msg("user", "A"), msg("assistant", "C")], 100), [], 10.0).read == 64
    legacy = DeepSeekProfile(legacy=True)
    legacy.simulate(render([msg("user", "A"), msg("assistant", "B")], 100), [], 0.0)
    assert legacy.simulate(render([msg("user", "A"), msg("assistant", "C")], 100), [], 1.0).read == 64


def test_prefix_profile_compares_with_the_previous_request_only() -> None:
    p = PrefixProfile()
    base = conversation(5)
    r1 = p.simulate(render(base, 100), [], 0.0)
    assert (r1.read, r1.write) == (0, 500)
    r2 = p.simulate(render([*base[:3], msg("user", "new")], 100), [], 1.0)
    assert (r2.read, r2.write, r2.uncached) == (300, 100, 0)
    chars = PrefixProfile(unit="chars")
    chars.simulate(render([msg("user", "aaaa"), msg("assistant", "bbbb")], 50), [], 0.0)
    half = chars.simulate(render([msg("user", "aaaa"), msg("assistant", "cccc")], 50), [], 1.0)
    assert half.read == 50
    with pytest.raises(ConfigError):
        PrefixProfile(unit="words")
