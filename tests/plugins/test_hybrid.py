"""hybrid: masking per request, and the summary never sees masked outputs."""

from __future__ import annotations

from engine_helpers import load, tool_session

from contextlab.engines.handoff import is_carrier, split_carrier
from contextlab.messages import content_text


def test_select_context_masks_like_mask_window() -> None:
    hybrid, mask = load("hybrid", window_m=3), load("mask_window", window_m=3)
    messages = tool_session(9)
    assert hybrid.select_context(messages) == mask.select_context(messages)


def test_summary_excludes_masked_outputs() -> None:
    engine = load("hybrid", window_m=2, tail_messages=4)
    messages = tool_session(12, users=2, lines=5)
    result = engine.compress(messages)
    body, _ = split_carrier(content_text(next(m for m in result if is_carrier(m))))
    # Old outputs are masked, so their values never reach the summary (it sees the placeholder) ...
    assert "value_5_" not in body
    assert "Old environment output" in body
    # ... whereas the plain summary engine, given the same span, does quote them.
    plain = load("summary", tail_messages=4).compress(tool_session(12, users=2, lines=5))
    plain_body, _ = split_carrier(content_text(next(m for m in plain if is_carrier(m))))
    assert "value_5_" in plain_body


def test_jetbrains_preset_counts_turns() -> None:
    engine = load("hybrid", preset="jetbrains")
    assert engine.every_n_turns == 43
    assert engine.should_compress_preflight(tool_session(44, users=44)) is True
    assert engine.should_compress_preflight(tool_session(43, users=43)) is False
    result = engine.compress(tool_session(60, users=60))
    real_users = [m for m in result if m["role"] == "user" and not is_carrier(m)]
    assert len(real_users) == 11  # the head's first request + a 10-turn verbatim tail
