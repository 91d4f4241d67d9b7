"""Threshold and budget arithmetic, rule by rule (host-contract.md §2a)."""

from __future__ import annotations

import pytest

from contextlab.engine import match_model_threshold
from contextlab.engines.compressor import CompressorEngine
from contextlab.engines.compressor import budgets as b


@pytest.mark.parametrize(
    ("window", "cap", "expected"),
    [
        (200_000, None, 150_000),
        (1_000_000, None, 500_000),
        (1_000_000, 256_000, 256_000),
        (64_000, None, 54_400),
    ],
)
def test_worked_examples(window: int, cap: int | None, expected: int) -> None:
    assert b.compute_threshold(window, 0.50, cap=cap) == expected
    engine = CompressorEngine(threshold_tokens_cap=cap)
    engine.update_model("gpt-4o", window)
    assert engine.threshold_tokens == expected


def test_small_window_floor_is_raise_only() -> None:
    assert b.compute_threshold(400_000, 0.50) == 300_000  # raised to 0.75 below 512K
    assert b.compute_threshold(400_000, 0.90) == 360_000  # never lowered
    assert b.compute_threshold(512_000, 0.50) == 256_000  # at 512K the floor no longer applies


def test_max_tokens_reservation() -> None:
    assert b.compute_threshold(1_000_000, 0.50, max_tokens=200_000) == 400_000
    assert b.compute_threshold(1_000_000, 0.50, max_tokens=0) == 500_000  # only positive ints count
    assert b.compute_threshold(1_000_000, 0.50, max_tokens=2_000_000) == 500_000  # ≤ 0 window: ignored


def test_64k_floor_and_85_percent_rule() -> None:
    # 0.75 × 80,000 = 60,000 < 64,000 floor; floor < window, so the floor is the threshold.
    assert b.compute_threshold(80_000, 0.50) == 64_000
    # The floor reaches the effective window: 85% of it.
    assert b.compute_threshold(100_000, 0.50, max_tokens=40_000) == 51_000
    assert b.compute_threshold(10, 0.50) == 8


def test_threshold_cap_never_exceeds_window() -> None:
    assert b.compute_threshold(1_000_000, 0.50, cap=2_000_000) == 500_000
    assert b.compute_threshold(200_000, 0.50, cap=100_000) == 100_000


def test_model_thresholds_longest_substring_and_provider_scope() -> None:
    overrides = {"gpt": 0.6, "gpt-4o": 0.9, "openrouter:gpt-4o": 0.55}
    assert match_model_threshold(overrides, "gpt-4o-mini") == 0.9
    assert match_model_threshold(overrides, "GPT-5") == 0.6
    assert match_model_threshold(overrides, "gpt-4o", provider="openrouter") == 0.55
    assert match_model_threshold(overrides, "claude") is None
    engine = CompressorEngine(model_thresholds={"big-model": 0.6})
    engine.update_model("big-model-1m", 1_000_000)
    assert engine.threshold_tokens == 600_000
    engine.update_model("other", 1_000_000)  # the configured percent was snapshotted once
    assert engine.threshold_tokens == 500_000


def test_summary_ceiling_and_budget() -> None:
    assert b.max_summary_tokens(200_000) == 10_000
    assert b.max_summary_tokens(100_000) == 5_000
    assert b.summary_budget(5_000, 10_000) == 2_000
    assert b.summary_budget(30_000, 10_000) == 6_000
    assert b.summary_budget(300_000, 10_000) == 10_000


def test_tail_policies() -> None:
    assert b.tail_token_budget(150_000, 200_000, mode="legacy", target_ratio=0.20) == 30_000
    assert b.tail_token_budget(150_000, 200_000, mode="lean", target_ratio=0.20) == 10_000  # 5,000 → min 10K
    assert b.tail_token_budget(500_000, 1_000_000, mode="lean", target_ratio=0.20) == 25_000
    assert b.tail_token_budget(54_400, 64_000, mode="lean", target_ratio=0.20) == 10_000
    assert b.tail_token_budget(40_000, 45_000, mode="lean", target_ratio=0.20) == 9_000  # ≤ 20% of window
    assert b.clamp_target_ratio(0.95) == 0.80 and b.clamp_target_ratio(0.01) == 0.10
    legacy = CompressorEngine(tail_mode="legacy")
    legacy.update_model("m", 200_000)
    assert legacy.tail_token_budget == 30_000


def test_message_budget_estimate() -> None:
    text = {"role": "user", "content": "x" * 400}
    assert b.message_budget_tokens(text) == 100 + 10
    image = {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": "data:"}}, {"type": "text", "text": "hi"}],
    }
    assert b.message_budget_tokens(image) == (6_400 + 2) // 4 + 10
    call = {"id": "c", "function": {"name": "f", "arguments": "{}"}}
    with_call = {"role": "assistant", "content": "", "tool_calls": [call], "reasoning": "r" * 40}
    assert b.message_budget_tokens(with_call) == 10 + (len(str(call)) + 3) // 4 + 10


def test_update_model_resets_calibration() -> None:
    engine = CompressorEngine()
    engine.update_model("m", 200_000)
    engine.update_from_response({"prompt_tokens": 160_000, "completion_tokens": 10})
    engine.thrash.strike()
    engine.update_model("m", 200_000)
    assert (engine.last_prompt_tokens, engine.last_real_prompt_tokens, engine.thrash.ineffective) == (0, 0, 0)
