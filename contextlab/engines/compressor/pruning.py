"""Phase 1 of the compressor: tool-output pruning without an LLM (``host-contract.md`` §2d step 2).

Passes, in the host's order:

1. duplicate string tool results (≥ 200 chars) anywhere become a fixed placeholder, newest kept;
2. tool results outside the protected tail longer than ``min_result_chars`` become a one-line
   informative summary; image parts become a fixed marker;
3. assistant tool-call argument JSON over 500 chars has string leaves over 200 chars cut;
4. (``compress`` only) pressure demotion inside the protected tail when it exceeds 1.5 × budget.

Every rewrite is a new dict (the caller's messages are never mutated) and depends only on
content, so a committed prune is byte-stable across later requests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from contextlab.engine import Message
from contextlab.engines.compressor import texts, tool_summary
from contextlab.engines.compressor.budgets import message_budget_tokens
from contextlab.messages import content_text

DUPLICATE_PLACEHOLDER = texts.DUPLICATE_OUTPUT
SCREENSHOT_PLACEHOLDER = texts.SCREENSHOT_REMOVED
DEDUPE_MIN_CHARS = 200
SUMMARY_MIN_CHARS = 200
ARGS_MAX_CHARS = 500
ARG_LEAF_CHARS = 200
ARG_MARKER_PREFIX = "⟪HERMES-CONTEXT-COMPRESSION:"
PROTECT_MIN_MESSAGES = 8
PRESSURE_FACTOR = 1.5
KEEP_VERBATIM_LAST = 3
_IMAGE_TYPES = ("image_url", "image", "input_image")


@dataclass
class PruneResult:
    """Pruned messages (a new list), how many messages changed, and the estimated tokens saved."""

    messages: list[Message]
    pruned: int
    saved_tokens: int


def protected_tail_start(messages: list[Message], count: int, tokens: int | None) -> int:
    """Index where the protected tail starts.

    With a token budget, walk backward accumulating the per-message budget estimate, protecting at
    least ``min(count, len, 8)`` messages; without one, protect the last ``count`` messages.
    """
    n = len(messages)
    if tokens is None:
        return max(0, n - max(0, count))
    floor = min(count, n, PROTECT_MIN_MESSAGES)
    acc = 0
    start = n
    for i in range(n - 1, -1, -1):
        cost = message_budget_tokens(messages[i])
        if n - start >= floor and acc + cost > tokens:
            break
        acc += cost
        start = i
    return start


def _raw_calls(messages: list[Message]) -> dict[str, tuple[str, str]]:
    """``tool_call_id -> (name, raw argument JSON)``, as upstream indexes calls."""
    found: dict[str, tuple[str, str]] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function") or {}
                found[str(call.get("id") or "")] = (str(fn.get("name") or "unknown"), str(fn.get("arguments") or ""))
    return found


def dedupe_tool_results(messages: list[Message]) -> int:
    """Pass 1 (in place on the given list's slots): older identical results become a placeholder."""
    seen: set[str] = set()
    changed = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content")
        if message.get("role") != "tool" or not isinstance(content, str) or len(content) < DEDUPE_MIN_CHARS:
            continue
        key = hashlib.md5(content.encode("utf-8", errors="replace")).hexdigest()[:12]
        if key in seen:
            messages[i] = {**message, "content": DUPLICATE_PLACEHOLDER}
            changed += 1
        else:
            seen.add(key)
    return changed


def _summarized(message: Message, calls: dict[str, tuple[str, str]], min_chars: int) -> Message | None:
    """Upstream ``_demote_tool_result_at``: images become a marker; a long string body a one-liner."""
    content = message.get("content")
    if isinstance(content, list):
        if not any(isinstance(p, dict) and p.get("type") in _IMAGE_TYPES for p in content):
            return None
        parts = [
            {"type": "text", "text": SCREENSHOT_PLACEHOLDER}
            if isinstance(p, dict) and p.get("type") in _IMAGE_TYPES
            else p
            for p in content
        ]
        return {**message, "content": parts}
    if not isinstance(content, str) or not content or content == texts.PRUNED_PLACEHOLDER:
        return None
    if content.startswith(("[Duplicate tool output", "[screenshot removed")) or tool_summary.is_stub(content):
        return None
    if len(content) <= min_chars:
        return None
    name, raw_args = calls.get(str(message.get("tool_call_id") or ""), ("unknown", ""))
    return {**message, "content": tool_summary.summarize(name, raw_args, content)}


SKILL_RECENT_WINDOW = 10


def protected_skills(messages: list[Message], boundary: int) -> set[str]:
    """Skills whose ``skill_view`` body survives passes 2–3: loaded in the last 10 messages or inside
    the protected tail, or named by a tail user message (upstream ``_collect_protected_skill_names``)."""
    total = len(messages)
    recent = max(0, total - SKILL_RECENT_WINDOW)
    tail = max(0, boundary)
    tail_users = [
        str(m["content"]).lower()
        for m in messages[tail:]
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    ]
    found: set[str] = set()
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or fn.get("name") != "skill_view":
                continue
            try:
                skill = json.loads(fn.get("arguments") or "{}").get("name", "")
            except (ValueError, TypeError, AttributeError):
                continue
            if (
                isinstance(skill, str)
                and skill
                and (i >= min(recent, tail) or any(skill.lower() in t for t in tail_users))
            ):
                found.add(skill.lower())
    return found


def summarize_old_results(messages: list[Message], end: int, min_chars: int) -> int:
    """Pass 2: tool results before ``end`` longer than ``min_chars`` become one-line summaries."""
    calls = _raw_calls(messages)
    spared = protected_skills(messages, end)
    changed = 0
    for i in range(min(end, len(messages))):
        if messages[i].get("role") != "tool":
            continue
        name, raw = calls.get(str(messages[i].get("tool_call_id") or ""), ("unknown", ""))
        if spared and name == "skill_view" and str(tool_summary._json_dict(raw).get("name", "")).lower() in spared:
            continue
        new = _summarized(messages[i], calls, min_chars)
        if new is not None:
            messages[i] = new
            changed += 1
    return changed


def _cut_leaf(value: str) -> str:
    """A long string leaf: its head plus upstream's self-describing marker, only when that is shorter."""
    if len(value) <= ARG_LEAF_CHARS or (value.startswith(ARG_MARKER_PREFIX, ARG_LEAF_CHARS) and value.endswith("⟫")):
        return value
    marker = texts.ARG_TRUNCATION.format(omitted=len(value) - ARG_LEAF_CHARS, total=len(value))
    if ARG_LEAF_CHARS + len(marker) >= len(value):
        return value
    return value[:ARG_LEAF_CHARS] + marker


def _cut_leaves(value: Any) -> Any:
    if isinstance(value, str):
        return _cut_leaf(value)
    if isinstance(value, list):
        return [_cut_leaves(v) for v in value]
    if isinstance(value, dict):
        return {k: _cut_leaves(v) for k, v in value.items()}
    return value


def truncate_call_arguments(messages: list[Message], end: int) -> int:
    """Pass 3: long tool-call argument JSON before ``end`` gets its long string leaves cut."""
    changed = 0
    for i in range(min(end, len(messages))):
        message = messages[i]
        calls = message.get("tool_calls")
        if message.get("role") != "assistant" or not isinstance(calls, list):
            continue
        new_calls: list[Any] = []
        touched = False
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            args = fn.get("arguments") if isinstance(fn, dict) else None
            if isinstance(args, str) and len(args) > ARGS_MAX_CHARS:
                try:
                    parsed = json.loads(args)
                except (ValueError, TypeError):
                    new_calls.append(call)  # invalid JSON is left alone
                    continue
                cut = json.dumps(_cut_leaves(parsed), ensure_ascii=False)
                if _cut_leaves(parsed) != parsed and len(cut) < len(args):
                    assert isinstance(fn, dict)
                    new_calls.append({**call, "function": {**fn, "arguments": cut}})
                    touched = True
                    continue
            new_calls.append(call)
        if touched:
            messages[i] = {**message, "tool_calls": new_calls}
            changed += 1
    return changed


def demote_under_pressure(messages: list[Message], start: int, budget: int) -> int:
    """Pass 4: when the protected tail exceeds 1.5 × budget, summarise its tool results oldest
    first, keeping the last 3 messages verbatim; as a last resort the newest tool bodies too."""
    limit = PRESSURE_FACTOR * budget
    costs = [message_budget_tokens(m) for m in messages[start:]]
    used = sum(costs)
    if used <= limit:
        return 0
    calls = _raw_calls(messages)
    n = len(messages)
    changed = 0
    verbatim_from = max(start, n - KEEP_VERBATIM_LAST)
    for lo, hi in ((start, verbatim_from), (verbatim_from, n)):
        for i in range(lo, hi):
            if used <= limit:
                return changed
            if messages[i].get("role") != "tool":
                continue
            new = _summarized(messages[i], calls, SUMMARY_MIN_CHARS)
            if new is None:
                continue
            messages[i] = new
            after = message_budget_tokens(new)
            used -= costs[i - start] - after
            costs[i - start] = after
            changed += 1
    return changed


def prune_tool_outputs(
    messages: list[Message],
    *,
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    min_result_chars: int = SUMMARY_MIN_CHARS,
    pressure_demotion: bool = True,
) -> PruneResult:
    """Run the pruning passes on a copy of ``messages`` (the input list and dicts are untouched)."""
    work = list(messages)
    before = sum(message_budget_tokens(m) for m in work)
    boundary = protected_tail_start(work, protect_tail_count, protect_tail_tokens)
    changed_at: set[int] = set()

    def track(pass_fn: Any, *args: Any) -> None:
        snapshot = list(work)
        pass_fn(work, *args)
        changed_at.update(i for i, (a, b) in enumerate(zip(snapshot, work, strict=True)) if a is not b)

    # Upstream counts deduplicated and summarised tool results; argument truncation rewrites rows
    # too (and its savings count towards the reclaim) but is not a pruned result.
    track(dedupe_tool_results)
    track(summarize_old_results, boundary, min_result_chars)
    if pressure_demotion and protect_tail_tokens is not None:
        track(demote_under_pressure, boundary, protect_tail_tokens)
    counted = len(changed_at)
    truncate_call_arguments(work, boundary)
    after = sum(message_budget_tokens(m) for m in work)
    return PruneResult(work, counted, max(0, before - after))


def remove_platform_echoes(messages: list[Message], latest_user: int | None) -> list[Message]:
    """Drop blank user rows directly following the latest actionable user turn (platform echoes)."""
    if latest_user is None:
        return messages
    end = latest_user + 1
    while end < len(messages) and messages[end].get("role") == "user" and not content_text(messages[end]).strip():
        end += 1
    # Only a blank run followed by an assistant row is a removable echo (upstream ``_blank_echo_indices_after``).
    if end == latest_user + 1 or end >= len(messages) or messages[end].get("role") != "assistant":
        return messages
    return [*messages[: latest_user + 1], *messages[end:]]
