"""Price data and per-request cost."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from pathlib import Path

import pytest

from contextlab.cache.pricing import load_prices, request_cost, uncached_cost
from contextlab.cache.profiles import CacheResult
from contextlab.errors import ConfigError


def test_every_shipped_row_has_as_of_and_source() -> None:
    table = load_prices()
    assert len(table.rows) >= 8
    for row in table.rows.values():
        assert row.as_of and row.source


def test_lookup_tolerates_vendor_prefix_and_suffix() -> None:
    table = load_prices()
    assert table.find("anthropic", "claude-opus-4-6-20260205").model == "claude-opus-4-6"  # type: ignore[union-attr]
    assert table.find_any("google/gemini-3-pro-preview").input == 2.0  # type: ignore[union-attr]
    assert table.find("openai", "gpt-unknown") is None


def test_cost_by_ttl_tier() -> None:
    opus = load_prices().find("anthropic", "claude-opus-5-5")
    result = CacheResult(
        total=1_000_000 + 100_000 + 50,
        read=1_000_000,
        write=100_000,
        uncached=50,
        write_by_ttl={"5m": 60_000, "1h": 40_000},
    )
    expected = (50 * 4.0 + 1_000_000 * 0.20 + 60_000 * 5.0 + 40_000 * 8.0 + 1000 * 20.0) / 1e6
    assert request_cost(result, opus, 1000) == pytest.approx(expected)
    assert uncached_cost(result, opus, 1000) == pytest.approx((1_100_050 * 4.0 + 1000 * 20.0) / 1e6)
    assert math.isnan(request_cost(result, None))


def test_long_context_and_off_peak_factors() -> None:
    table = load_prices()
    sol = table.find("openai", "gpt-6.2-sol")
    big = CacheResult(total=300_000, read=0, write=0, uncached=300_000)
    assert request_cost(big, sol, 1000) == pytest.approx((300_000 * 2.0 * 2 + 1000 * 10.0 * 1.5) / 1e6)
    # cache reads take cache_mult, uncached input takes input_mult (different here on purpose)
    skewed = replace(sol, long_context={"threshold": 272_000, "input_mult": 2, "cache_mult": 3, "output_mult": 1})
    mixed = CacheResult(total=300_000, read=200_000, write=0, uncached=100_000)
    assert request_cost(mixed, skewed) == pytest.approx((100_000 * 2.0 * 2 + 200_000 * 0.10 * 3) / 1e6)
    below = CacheResult(total=272_000, read=200_000, write=0, uncached=72_000)
    assert request_cost(below, skewed) == pytest.approx((72_000 * 2.0 + 200_000 * 0.10) / 1e6)
    flash = table.find("deepseek", "deepseek-flash")
    small = CacheResult(total=1000, read=0, write=0, uncached=1000)
    peak = dt.datetime(2026, 11, 30, 2, 0, tzinfo=dt.UTC).timestamp()  # Monday 02:00 UTC
    off = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC).timestamp()
    assert request_cost(small, flash, timestamp=off) == pytest.approx(request_cost(small, flash, timestamp=peak) / 2)


def test_user_file_overrides_and_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "prices.yaml"
    user.write_text(
        "prices:\n  - {provider: anthropic, model: claude-opus-5-5, input: 9, cache_read: 1, output: 30,"
        " as_of: '2026-12-01', source: my invoice}\n"
    )
    assert load_prices(user).find("anthropic", "claude-opus-5-5").input == 9.0  # type: ignore[union-attr]
    monkeypatch.setenv("CONTEXTLAB_PRICES", str(user))
    assert load_prices().find("anthropic", "claude-opus-5-5").input == 9.0  # type: ignore[union-attr]
    bad = tmp_path / "bad.yaml"
    bad.write_text("prices:\n  - {provider: x, model: y, input: 1, cache_read: 1, output: 1}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: prices\[0\]: missing as_of, source"):
        load_prices(bad)
