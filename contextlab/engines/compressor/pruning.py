"""Phase 1 of the compressor: tool-output pruning without an LLM (``host-contract.md`` §2d step 2).

Passes, in the host's order:

1. duplicate string tool results (≥ 200 chars) anywhere become a fixed placeholder, newest kept;
2. tool results outside the protected tail longer than ``min_result_chars`` become a one-line
   informative summary; image parts become a fixed marker;
3. assistant tool-call argument JSON over 500 chars is re-serialised with string leaves over 200
   chars cut to their head plus ``...[truncated]``;
4. (``compress`` only) pressure demotion inside the protected tail when it exceeds 1.5 × budget.

Every rewrite is a new dict (the caller's messages are never mutated) and depends only on
content, so a committed prune is byte-stable across later requests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from contextlab import hermes_texts as texts
from contextlab.engine import Message
from contextlab.engines.compressor import tool_summary
from contextlab.engines.compressor.assembly import is_blank_user
from contextlab.engines.compressor.budgets import (
    CHARGE_EVERY_ROW,
    BudgetEstimate,
    WalkRule,
    budget_estimator,
    message_budget_tokens,
    walk_rule,
)
from contextlab.engines.compressor.rules import NEWEST, HermesRules

DUPLICATE_PLACEHOLDER = texts.DUPLICATE_OUTPUT
SCREENSHOT_PLACEHOLDER = texts.SCREENSHOT_REMOVED
DEDUPE_MIN_CHARS = 200
SUMMARY_MIN_CHARS = 200
ARGS_MAX_CHARS = 500
ARG_LEAF_CHARS = 200
ARG_TRUNCATED = texts.ARG_TRUNCATED
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


def protected_tail_start(
    messages: list[Message],
    count: int,
    tokens: int | None,
    *,
    floor_cap: int | None = PROTECT_MIN_MESSAGES,
    rule: WalkRule = CHARGE_EVERY_ROW,
) -> int:
    """Index where the protected tail starts (upstream ``_prune_old_tool_results``' boundary).

    With a token budget, walk backward accumulating the per-message budget estimate; the row that
    breaks the budget is itself protected, and at least ``min(count, len, floor_cap)`` messages are
    (no cap when ``floor_cap`` is None, as in 0.19.0). Without a budget, protect the last ``count``.
    ``rule`` prices the rows (:func:`budgets.walk_rule`; default: the newest estimate, reasoning
    charged on every row).
    """
    n = len(messages)
    if tokens is None or tokens <= 0:
        return max(0, n - max(0, count))
    floor = min(count, n) if floor_cap is None else min(count, n, floor_cap)
    acc = 0
    boundary = n
    for i in range(n - 1, -1, -1):
        row_cost = rule.cost(messages, i)
        if acc + row_cost > tokens and n - i >= floor:
            boundary = i
            break
        acc += row_cost
        boundary = i
    return n - max(n - boundary, floor)


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


def _summarized(
    message: Message,
    calls: dict[str, tuple[str, str]],
    min_chars: int,
    *,
    skip_stubs: bool = True,
    skill_marker: bool = False,
) -> Message | None:
    """Upstream ``_demote_tool_result_at``: images become a marker; a long string body a one-liner.
    ``skip_stubs``: a body that already is a one-line summary is left alone (0.19.0 re-summarised it).
    ``skill_marker``: a large ``skill_view`` body's one-liner carries the skill-pruning marker."""
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
    if content.startswith("[Duplicate tool output"):
        return None
    if skip_stubs and (content.startswith("[screenshot removed") or tool_summary.is_stub(content)):
        return None
    if len(content) <= min_chars:
        return None
    name, raw_args = calls.get(str(message.get("tool_call_id") or ""), ("unknown", ""))
    return {**message, "content": tool_summary.summarize(name, raw_args, content, skill_marker=skill_marker)}


SKILL_RECENT_WINDOW = 10


def protected_skills(messages: list[Message], boundary: int) -> set[str]:
    """Skills whose ``skill_view`` body survives pass 2 (newer upstream): loaded in the last 10 messages
    or inside the protected tail, or named by a tail user message (``_collect_protected_skill_names``)."""
    recent = max(0, len(messages) - SKILL_RECENT_WINDOW)
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
            skill = tool_summary._json_dict(str(fn.get("arguments") or "")).get("name", "")
            if (
                isinstance(skill, str)
                and skill
                and (i >= min(recent, tail) or any(skill.lower() in t for t in tail_users))
            ):
                found.add(skill.lower())
    return found


def summarize_old_results(
    messages: list[Message], end: int, min_chars: int, *, skip_stubs: bool = True, skill_rules: bool = False
) -> int:
    """Pass 2: tool results before ``end`` longer than ``min_chars`` become one-line summaries.
    ``skill_rules`` (newer upstream): recently loaded skill bodies are spared, and a pruned large
    ``skill_view`` body carries the skill-pruning marker."""
    calls = _raw_calls(messages)
    spared = protected_skills(messages, end) if skill_rules else set()
    changed = 0
    for i in range(max(0, min(end, len(messages)))):
        if messages[i].get("role") != "tool":
            continue
        name, raw = calls.get(str(messages[i].get("tool_call_id") or ""), ("unknown", ""))
        if spared and name == "skill_view" and str(tool_summary._json_dict(raw).get("name", "")).lower() in spared:
            continue
        new = _summarized(messages[i], calls, min_chars, skip_stubs=skip_stubs, skill_marker=skill_rules)
        if new is not None:
            messages[i] = new
            changed += 1
    return changed


def _cut_leaves(value: Any) -> Any:
    """Every string leaf over 200 chars becomes its head plus ``...[truncated]``."""
    if isinstance(value, str):
        return value[:ARG_LEAF_CHARS] + ARG_TRUNCATED if len(value) > ARG_LEAF_CHARS else value
    if isinstance(value, list):
        return [_cut_leaves(v) for v in value]
    if isinstance(value, dict):
        return {k: _cut_leaves(v) for k, v in value.items()}
    return value


def _truncated_call_row(message: Message) -> Message | None:
    """Upstream ``_truncate_tool_call_args_at``: the row with its long argument JSON re-serialised
    (``json.dumps`` defaults, so even an uncut but differently spaced blob changes), or None."""
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list) or not calls:
        return None
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
                assert isinstance(fn, dict) and isinstance(call, dict)
                new_calls.append({**call, "function": {**fn, "arguments": cut}})
                touched = True
                continue
        new_calls.append(call)
    return {**message, "tool_calls": new_calls} if touched else None


def truncate_call_arguments(messages: list[Message], end: int) -> int:
    """Pass 3: long tool-call argument JSON before ``end`` gets its long string leaves cut."""
    changed = 0
    for i in range(max(0, min(end, len(messages)))):
        new = _truncated_call_row(messages[i])
        if new is not None:
            messages[i] = new
            changed += 1
    return changed


def demote_under_pressure(
    messages: list[Message],
    start: int,
    budget: int,
    min_chars: int = SUMMARY_MIN_CHARS,
    estimate: BudgetEstimate = message_budget_tokens,
    skill_marker: bool = False,
) -> int:
    """Pass 4 (upstream #61932): when the protected region ``messages[start:]`` exceeds 1.5 × budget,
    summarise its tool results (and cut long call arguments) oldest first, keeping the last 3 rows
    verbatim, until it fits; if it still does not, every protected tool result but the newest; as a
    last resort the newest too. Returns how many tool results were summarised."""
    ceiling = int(budget * PRESSURE_FACTOR)
    n = len(messages)
    start = max(0, start)
    demote_end = n - min(KEEP_VERBATIM_LAST, n)
    calls = _raw_calls(messages)
    costs = [estimate(m) for m in messages]

    def region() -> int:
        return sum(costs[start:])

    def demote(i: int) -> bool:
        if messages[i].get("role") != "tool":
            return False
        new = _summarized(messages[i], calls, min_chars, skill_marker=skill_marker)
        if new is None:
            return False
        messages[i] = new
        costs[i] = estimate(new)
        return True

    def truncate(i: int) -> None:
        new = _truncated_call_row(messages[i])
        if new is not None:
            messages[i] = new
            costs[i] = estimate(new)

    if not (demote_end > start and region() > ceiling):
        return 0
    changed = 0
    for i in range(start, demote_end):
        changed += demote(i)
        truncate(i)
        if region() <= ceiling:
            break
    if region() > ceiling:
        newest_tool = next((i for i in range(n - 1, -1, -1) if messages[i].get("role") == "tool"), None)
        for i in range(start, n):
            if i == newest_tool:
                continue
            if messages[i].get("role") == "tool":
                changed += demote(i)
            elif messages[i].get("role") == "assistant":
                truncate(i)
        if newest_tool is not None and newest_tool >= start and region() > ceiling:
            changed += demote(newest_tool)
    return changed


def prune_tool_outputs(
    messages: list[Message],
    *,
    protect_tail_count: int,
    protect_tail_tokens: int | None,
    min_result_chars: int = SUMMARY_MIN_CHARS,
    rules: HermesRules = NEWEST,
    stale_thinking_on_wire: bool = False,
) -> PruneResult:
    """Run the pruning passes on a copy of ``messages`` (the input list and dicts are untouched).

    Pass 4 runs only with a token budget (the ``compress`` path) and when ``rules`` has it.
    ``stale_thinking_on_wire``: the route sends old turns' reasoning again, so the boundary walk
    charges it on every row (:func:`budgets.walk_rule`)."""
    work = list(messages)
    estimate = budget_estimator(rules.budget_estimate_ceil)
    before = sum(estimate(m) for m in work)
    walk = walk_rule(
        work,
        ceil=rules.budget_estimate_ceil,
        charge_all_thinking=stale_thinking_on_wire or not rules.newest_turn_thinking,
    )
    boundary = protected_tail_start(
        work, protect_tail_count, protect_tail_tokens, floor_cap=rules.prune_floor_cap, rule=walk
    )
    changed_at: set[int] = set()

    def track(pass_fn: Any, *args: Any, **kwargs: Any) -> None:
        snapshot = list(work)
        pass_fn(work, *args, **kwargs)
        changed_at.update(
            i for i, (a, b) in enumerate(zip(snapshot, work, strict=True)) if a is not b and b.get("role") == "tool"
        )

    # Upstream counts deduplicated and summarised tool results; argument truncation rewrites rows
    # too (and its savings count towards the reclaim) but is not a pruned result.
    track(dedupe_tool_results)
    track(
        summarize_old_results,
        boundary,
        min_result_chars,
        skip_stubs=rules.skip_summarised_results,
        skill_rules=rules.skill_rules,
    )
    truncate_call_arguments(work, boundary)
    if rules.pressure_demotion and protect_tail_tokens is not None and protect_tail_tokens > 0:
        track(demote_under_pressure, boundary, protect_tail_tokens, min_result_chars, estimate, rules.skill_rules)
    counted = len(changed_at)
    after = sum(estimate(m) for m in work)
    return PruneResult(work, counted, max(0, before - after))


def remove_platform_echoes(messages: list[Message], latest_user: int | None) -> list[Message]:
    """Drop blank user rows directly following the latest actionable user turn (platform echoes)."""
    if latest_user is None:
        return messages
    end = latest_user + 1
    while end < len(messages) and is_blank_user(messages[end]):
        end += 1
    # Only a blank run followed by an assistant row is a removable echo (upstream ``_blank_echo_indices_after``).
    if end == latest_user + 1 or end >= len(messages) or messages[end].get("role") != "assistant":
        return messages
    return [*messages[: latest_user + 1], *messages[end:]]
