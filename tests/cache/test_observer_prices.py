"""A profile without a price row warns (its cost is NaN) instead of failing silently."""

from __future__ import annotations

import math

import pytest

from contextlab import CacheObserver, replay
from contextlab.examples import tool_conversation


def test_unpriced_model_warns_and_costs_nan() -> None:
    with pytest.warns(UserWarning, match="no price for anthropic:claude-unknown-9"):
        observer = CacheObserver("anthropic:claude-unknown-9")
    assert observer.unpriced() == ["anthropic:claude-unknown-9"]
    result = replay(tool_conversation(3), "passthrough", observers=[observer])
    assert result.trace["cost_usd"].map(math.isnan).all()
    assert result.trace["cache_read_tokens"].notna().all()
