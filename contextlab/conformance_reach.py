"""The ``compacts_under_threshold`` conformance rule: given a compactable history over its threshold,
an engine that says it should compress brings it under the threshold within the host's attempts.

The history is a single-turn tool loop (one user message, then assistant tool calls and their
results, SWE-bench style): the shape where count-based tails cover everything and a pass turns into
a no-op, after which the host stops asking for the rest of the turn (``docs/host-loop.md``).
"""

from __future__ import annotations

import json

from contextlab.engine import ContextEngine, Message, overrides
from contextlab.messages import UidMinter, clone_messages, stamp_identity
from contextlab.tokens import RoughCounter

REACH_WINDOW = 128_000
"""Window given to the engine for this rule (the built-in compressor's threshold floor is 64K)."""
HOST_ATTEMPTS = 3
"""Passes the host allows per turn (``compression.max_attempts`` default)."""
OVER_FACTOR = 1.5
"""The history is grown to this multiple of the threshold."""
RESULT_SHARE = 8
"""Each tool result is about ``threshold / RESULT_SHARE`` tokens: a dozen results cross the
threshold, so a 20-message tail alone holds more than the threshold (the failure this rule exists for)."""


def tool_loop_history(target_tokens: int, result_tokens: int = 2_000) -> list[Message]:
    """One user ask, then tool calls with ~``result_tokens`` results until ``target_tokens`` (rough)."""
    rough = RoughCounter()
    history: list[Message] = [{"role": "user", "content": "Fix the failing test in the parser module."}]
    total = rough.message(history[0])
    step = 0
    while total < target_tokens:
        call_id = f"call_reach_{step:04d}"
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"sed -n {step}p src/parser.py"})},
        }
        n_lines = max(1, result_tokens * 4 // 48)
        lines = "\n".join(f"{step:04d}:{i:05d} value = parse(token_{i}, depth={step})" for i in range(n_lines))
        pair: list[Message] = [
            {"role": "assistant", "content": f"Step {step}: reading the next chunk.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": lines},
        ]
        history += pair
        total += sum(rough.message(m) for m in pair)
        step += 1
    stamp_identity(history, UidMinter(0))
    return history


def check_reach(engine: ContextEngine) -> str | None:
    """Why ``engine`` fails the rule, or None (also None when it never claims it should compress)."""
    engine.update_model("gpt-4o", REACH_WINDOW)
    threshold = int(engine.threshold_tokens)
    if threshold <= 0:
        return None
    rough = RoughCounter()
    selects = overrides(engine, "select_context")

    def request_tokens(rows: list[Message]) -> int:
        """The request's rough size, as the host measures it: after ``select_context`` if any."""
        chosen = (
            engine.select_context(clone_messages(rows), conversation_messages=clone_messages(rows)) if selects else None
        )
        usable = isinstance(chosen, list) and chosen and all(isinstance(m, dict) for m in chosen)
        return rough.messages(chosen if usable else rows)  # type: ignore[arg-type]

    history = tool_loop_history(int(threshold * OVER_FACTOR), max(1, threshold // RESULT_SHARE))
    tokens = request_tokens(history)
    if tokens < threshold:
        return None  # the engine's selection already fits the request under the threshold
    if not engine.should_compress(tokens):
        return None  # the engine does not compact at this size (passthrough, maskers): nothing promised
    start = tokens
    for _ in range(HOST_ATTEMPTS):
        result = engine.compress(clone_messages(history), current_tokens=tokens)
        if not isinstance(result, list) or not all(isinstance(m, dict) for m in result):
            return "compress did not return a list of message dicts"
        history = result
        tokens = request_tokens(history)
        if tokens < threshold:
            return None
    return (
        f"a single-turn tool loop of {start:,} rough tokens (threshold {threshold:,}) is still "
        f"{tokens:,} tokens after {HOST_ATTEMPTS} compress passes"
    )
