"""Threshold and budget arithmetic of the host's compressor (``host-contract.md`` §2a), as pure functions.

Worked checks (no ``max_tokens``, no cap): a 200,000 window gives 150,000 (0.50 raised to 0.75
below 512K); 1,000,000 gives 500,000 (256,000 with a 256,000 cap); 64,000 gives 54,400 (the 64K
floor reaches the window, so 85% of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from contextlab.engine import (
    Message,
    match_model_threshold,  # noqa: F401  (the host's rule, shared with the ABC)
)
from contextlab.thresholds import MINIMUM_CONTEXT_LENGTH
from contextlab.tokens import estimate_tokens_rough, legacy_messages_tokens

SMALL_WINDOW = 512_000
SMALL_WINDOW_FLOOR_PCT = 0.75
DEGENERATE_PCT = 0.85
SUMMARY_RATIO = 0.20
MIN_SUMMARY_TOKENS = 2_000
SUMMARY_TOKENS_CEILING = 10_000
SUMMARY_WINDOW_FRACTION = 0.05
LEAN_TAIL_FRACTION = 0.025
LEAN_TAIL_MIN = 10_000
LEAN_TAIL_MAX = 25_000
LEAN_TAIL_WINDOW_CAP = 0.20
TARGET_RATIO_RANGE = (0.10, 0.80)
IMAGE_CHARS = 6_400
"""The compressor's own per-image size in its tail walk (1,600 tokens × 4 chars)."""
MSG_OVERHEAD_TOKENS = 10
REPLAY_KEYS = (
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
)
"""0.19.0 charged each of these at its serialized length on every row."""
TAIL_MODES = ("lean", "legacy")


def clamp_target_ratio(ratio: float) -> float:
    """``summary_target_ratio`` clamped to [0.10, 0.80]."""
    low, high = TARGET_RATIO_RANGE
    return max(low, min(high, float(ratio)))


def compute_threshold(
    context_length: int,
    percent: float,
    *,
    max_tokens: int | None = None,
    cap: int | None = None,
) -> int:
    """The compaction threshold in tokens, step for step as the host computes it.

    Args:
        context_length: The model window.
        percent: The configured (or per-model) threshold fraction.
        max_tokens: Output reservation; only a positive int counts.
        cap: ``compression.threshold_tokens``; the threshold never exceeds ``min(cap, window)``.
    """
    pct = float(percent)
    if context_length < SMALL_WINDOW:
        pct = max(pct, SMALL_WINDOW_FLOOR_PCT)  # raise-only floor for small windows
    effective = context_length
    reserved = isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0
    if reserved and context_length - int(max_tokens or 0) > 0:
        effective = context_length - int(max_tokens or 0)
    floored = max(int(effective * pct), MINIMUM_CONTEXT_LENGTH)
    threshold = floored
    if floored >= effective:
        threshold = max(1, min(int(effective * DEGENERATE_PCT), effective - 1))
    if cap is not None and int(cap) > 0:
        threshold = min(threshold, min(int(cap), context_length))
    return threshold


def max_summary_tokens(context_length: int) -> int:
    """The summary ceiling: ``min(5% of the window, 10,000)``."""
    return min(int(context_length * SUMMARY_WINDOW_FRACTION), SUMMARY_TOKENS_CEILING)


def tail_token_budget(threshold: int, context_length: int, *, mode: str, target_ratio: float) -> int:
    """The protected-tail budget: ``legacy`` = ratio × threshold; ``lean`` = 2.5% of the window
    clamped to 10K–25K and never over 20% of the window."""
    if mode == "legacy":
        return int(threshold * target_ratio)
    lean = min(max(int(context_length * LEAN_TAIL_FRACTION), LEAN_TAIL_MIN), LEAN_TAIL_MAX)
    return min(lean, int(context_length * LEAN_TAIL_WINDOW_CAP))


def summary_budget(middle_tokens: int, ceiling: int) -> int:
    """``max(2000, min(int(0.20 × middle tokens), ceiling))``."""
    return max(MIN_SUMMARY_TOKENS, min(int(SUMMARY_RATIO * middle_tokens), ceiling))


@lru_cache(maxsize=262_144)
def _text_tokens(text: str) -> int:
    # Memoized by content: the tail walk, the pruning passes and the summary budget all estimate
    # the same strings, and a replay compacts overlapping histories again and again.
    return estimate_tokens_rough(text)


def message_budget_tokens(message: Message, charge_stale_thinking: bool = True) -> int:
    """The compressor's per-message tail-walk estimate (``_estimate_msg_budget_tokens``).

    The content sent (a non-empty ``api_content`` sidecar of a user or assistant row replaces
    ``content``), the full tool-call envelopes, the Codex replay items (their ciphertext blanked),
    and, when ``charge_stale_thinking``, the reasoning text: ``reasoning_content``, ``reasoning``
    unless a non-blank ``reasoning_content`` already carries it, and the thinking text of
    ``reasoning_details`` when neither is there (never its signed envelope).
    """
    sidecar = message.get("api_content")
    if isinstance(sidecar, str) and sidecar and message.get("role") in ("user", "assistant"):
        content: object = sidecar
    else:
        content = message.get("content") or ""
    total = MSG_OVERHEAD_TOKENS
    if isinstance(content, str):
        total += _text_tokens(content)
    elif isinstance(content, list):
        chars = 0
        for part in content:
            if isinstance(part, dict):
                if part.get("type") in ("image_url", "image", "input_image"):
                    chars += IMAGE_CHARS
                else:
                    # upstream counts a part's text field only (0 for a part without one)
                    chars += len(str(part.get("text") or ""))
            else:
                chars += len(str(part))
        total += chars // 4
    else:
        total += len(str(content)) // 4
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                total += _text_tokens(str(call))
    # Absent keys (most rows) cost nothing: skip them without the calls.
    for key in ALWAYS_REPLAYED_KEYS:
        items = message.get(key)
        if items is not None:
            total += _serialized_length(_blank_ciphertext(items)) // 4
    if not charge_stale_thinking:
        return total
    reasoning_content = message.get("reasoning_content")
    reasoning = message.get("reasoning")
    if reasoning_content is not None:
        total += _serialized_length(reasoning_content) // 4
    if reasoning is not None and not (isinstance(reasoning_content, str) and reasoning_content.strip()):
        total += _serialized_length(reasoning) // 4
    if not (reasoning or reasoning_content):
        details = message.get("reasoning_details")
        if details is not None:
            total += _details_text_chars(details) // 4
    return total


ALWAYS_REPLAYED_KEYS = ("codex_reasoning_items", "codex_message_items")
"""Replay items sent with every kept assistant turn, so charged on every row."""


def _blank_ciphertext(items: object) -> object:
    """Codex items with ``encrypted_content`` blanked: the provider prices ciphertext by its own
    count, never by its bytes (upstream ``strip_opaque_replay_items``)."""
    if not isinstance(items, list):
        return items
    return [
        {k: ("" if k == "encrypted_content" else v) for k, v in item.items()} if isinstance(item, dict) else item
        for item in items
    ]


def _details_text_chars(value: object) -> int:
    """Characters of thinking text in a ``reasoning_details`` envelope (``thinking``, ``text`` and
    ``summary`` of its parts, and string parts), never its signatures or encoded blobs."""
    if isinstance(value, str):
        return len(value)
    parts = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
    total = 0
    for part in parts:
        if isinstance(part, str):
            total += len(part)
        elif isinstance(part, dict):
            texts = (part.get(key) for key in ("thinking", "text", "summary"))
            total += sum(len(text) for text in texts if isinstance(text, str))
    return total


def last_assistant_index(messages: list[Message]) -> int:
    """Index of the newest assistant row, -1 without one: the one turn whose reasoning a strict
    route still sends."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            return i
    return -1


def _serialized_length(value: object) -> int:
    """Upstream ``_serialized_length_for_budget``: a string's length, else its sorted-key JSON's."""
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        return len(value)
    try:
        return len(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return len(str(value))


def message_budget_tokens_floor(message: Message) -> int:
    """0.19.0's ``_estimate_msg_budget_tokens``: ``len // 4`` of the content and of each tool call."""
    content = message.get("content") or ""
    if isinstance(content, str):
        total = len(content) // 4 + MSG_OVERHEAD_TOKENS
    else:
        total = message_budget_tokens({"content": content})  # list content: the same char rule
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        total += sum(len(str(call)) // 4 for call in calls if isinstance(call, dict))
    for key in REPLAY_KEYS:
        total += _serialized_length(message.get(key)) // 4
    return total


BudgetEstimate = Callable[[Message], int]


def budget_estimator(ceil: bool) -> BudgetEstimate:
    """The tail-walk estimate of a rule generation (``HermesRules.budget_estimate_ceil``)."""
    return message_budget_tokens if ceil else message_budget_tokens_floor


def _without_stale_thinking(message: Message) -> int:
    return message_budget_tokens(message, charge_stale_thinking=False)


class WalkRule(NamedTuple):
    """How the tail walks (the pruning boundary and the tail cut) price a list's rows: ``estimate``
    for every row but ``full_row``, charged with its reasoning (-1: none)."""

    estimate: BudgetEstimate
    full_row: int = -1

    def cost(self, messages: list[Message], i: int) -> int:
        """The walk's cost of row ``i``."""
        return message_budget_tokens(messages[i]) if i == self.full_row else self.estimate(messages[i])

    def costs(self, messages: list[Message]) -> list[int]:
        """Every row's cost, in one pass."""
        costs = [self.estimate(m) for m in messages]
        if self.full_row >= 0:
            costs[self.full_row] = message_budget_tokens(messages[self.full_row])
        return costs


CHARGE_EVERY_ROW = WalkRule(message_budget_tokens)
"""The newest estimate on every row, reasoning included (an echo route's walk)."""


def walk_rule(messages: list[Message], *, ceil: bool, charge_all_thinking: bool) -> WalkRule:
    """The tail walks' pricing of ``messages``.

    ``ceil`` picks the rule generation's estimate (:func:`budget_estimator`). With the newest
    estimate, reasoning is charged on every row only when ``charge_all_thinking`` (the route sends
    old turns' reasoning again: ``contextlab.reasoning.stale_thinking_reaches_wire``); otherwise on
    the newest assistant row alone, as the request will carry it.
    """
    if not ceil:
        return WalkRule(message_budget_tokens_floor)
    if charge_all_thinking:
        return CHARGE_EVERY_ROW
    return WalkRule(_without_stale_thinking, last_assistant_index(messages))


def rough_messages_0_19_0(messages: list[Message]) -> int:
    """0.19.0's ``estimate_messages_tokens_rough`` (every key counted, one ceiling over the list):
    :func:`contextlab.tokens.legacy_messages_tokens`, which the 0.19.0 host loop uses too.
    Newer hosts leave persistence-only keys out (``contextlab.tokens.RoughCounter``)."""
    return legacy_messages_tokens(messages)
