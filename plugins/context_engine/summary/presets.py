"""Presets named after the systems they imitate (engines.md §5 E3; sources in each comment)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # Factory's anchored iterative summary; the ABC's 0.75 threshold; Hermes-like 20-message tail.
    "factory": {"threshold_fraction": 0.75, "summary_mode": "anchored", "tail_messages": 20},
    # Claude Code: ~83% effective auto-compact point (secondary sources; docs say 95%), the whole
    # history is replaced by a regenerated summary (no verbatim tail).
    "claude_code": {"threshold_fraction": 0.83, "summary_mode": "regenerate", "tail_messages": 0},
    # Codex CLI: 90%, no tail, newest user messages kept verbatim up to 20,000 tokens.
    "codex": {
        "threshold_fraction": 0.90,
        "summary_mode": "regenerate",
        "tail_messages": 0,
        "keep_user_tokens": 20_000,
    },
    # Hermes: 50% with a 75% floor below a 512K window and a 256K-token cap; protect_first_n 3;
    # lean tail of clamp(0.025 x window, 10k, 25k) tokens; iterative (anchored) summary update.
    "hermes": {
        "threshold_fraction": 0.50,
        "summary_mode": "anchored",
        "keep_first": 3,
        "tail_tokens": "lean",
        "hermes_threshold": True,
    },
    # OpenHands LLMSummarizingCondenser (V0 server): condense past max_size=120 events, keep_first=4,
    # keep max_size // 2 - keep_first - 1 = 55 newest events; the prompt folds in the previous summary.
    "openhands": {
        "threshold_fraction": 0.95,
        "summary_mode": "regenerate",
        "keep_first": 4,
        "tail_messages": 55,
        "max_events": 120,
    },
}
