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
from contextlab.engines.compressor.budgets import message_budget_tokens
from contextlab.engines.tooltext import call_index, summarize_tool_result
from contextlab.messages import content_text

DUPLICATE_PLACEHOLDER = "[Duplicate tool output — same content as a more recent call]"
SCREENSHOT_PLACEHOLDER = "[screenshot removed to save context]"
DEDUPE_MIN_CHARS = 200
SUMMARY_MIN_CHARS = 200
ARGS_MAX_CHARS = 500
ARG_LEAF_CHARS = 200
ARG_TRUNCATED = "...[truncated]"
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


def _is_placeholder(text: str) -> bool:
    return text.startswith("[") and "\n" not in text and len(text) <= 400


def dedupe_tool_results(messages: list[Message]) -> int:
    """Pass 1 (in place on the given list's slots): older identical results become a placeholder."""
    seen: set[str] = set()
    changed = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content")
        if message.get("role") != "tool" or not isinstance(content, str) or len(content) < DEDUPE_MIN_CHARS:
            continue
        key = hashlib.md5(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if key in seen:
            messages[i] = {**message, "content": DUPLICATE_PLACEHOLDER}
            changed += 1
        else:
            seen.add(key)
    return changed


def _summarized(message: Message, calls: dict[str, tuple[str, dict[str, Any]]], min_chars: int) -> Message | None:
    content = message.get("content")
    call = calls.get(str(message.get("tool_call_id") or ""))
    name, args = call if call is not None else (str(message.get("name") or "tool"), {})
    if isinstance(content, str):
        if len(content) <= min_chars or _is_placeholder(content):
            return None
        return {**message, "content": summarize_tool_result(name, args, content)}
    if isinstance(content, list):
        text = content_text(message)
        if len(text) > min_chars:
            return {**message, "content": summarize_tool_result(name, args, text)}
        if any(isinstance(p, dict) and p.get("type") in _IMAGE_TYPES for p in content):
            parts = [
                {"type": "text", "text": SCREENSHOT_PLACEHOLDER}
                if isinstance(p, dict) and p.get("type") in _IMAGE_TYPES
                else p
                for p in content
            ]
            return {**message, "content": parts}
    return None


def summarize_old_results(messages: list[Message], end: int, min_chars: int) -> int:
    """Pass 2: tool results before ``end`` longer than ``min_chars`` become one-line summaries."""
    calls = call_index(messages)
    changed = 0
    for i in range(min(end, len(messages))):
        if messages[i].get("role") != "tool":
            continue
        new = _summarized(messages[i], calls, min_chars)
        if new is not None:
            messages[i] = new
            changed += 1
    return changed


def _cut_leaves(value: Any) -> Any:
    if isinstance(value, str):
        return value[:ARG_LEAF_CHARS] + ARG_TRUNCATED if len(value) > ARG_LEAF_CHARS else value
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
                if cut != args:
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
    calls = call_index(messages)
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

    track(dedupe_tool_results)
    track(summarize_old_results, boundary, min_result_chars)
    track(truncate_call_arguments, boundary)
    if pressure_demotion and protect_tail_tokens is not None:
        track(demote_under_pressure, boundary, protect_tail_tokens)
    after = sum(message_budget_tokens(m) for m in work)
    return PruneResult(work, len(changed_at), max(0, before - after))


def remove_platform_echoes(messages: list[Message], latest_user: int | None) -> list[Message]:
    """Drop blank user rows directly following the latest actionable user turn (platform echoes)."""
    if latest_user is None:
        return messages
    end = latest_user + 1
    while end < len(messages) and messages[end].get("role") == "user" and not content_text(messages[end]).strip():
        end += 1
    if end == latest_user + 1:
        return messages
    return [*messages[: latest_user + 1], *messages[end:]]
