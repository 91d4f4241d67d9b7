"""Recorded provider usage objects, detected by shape, parsed into one normalized record (caching.md §8.6).

Gateways mix shapes (LiteLLM adds ``cache_creation_input_tokens`` to OpenAI-shaped usage), so the shape
is read from the keys, never from a configured provider name. The raw dict is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlab.errors import TranscriptError


@dataclass(frozen=True)
class NormalizedUsage:
    """One request's usage in provider-independent terms.

    ``total_in = cache_read + cache_write + uncached_in``; ``cache_write = cache_write_5m +
    cache_write_1h`` when the split is known (other TTL tiers are in ``cache_write`` only).
    """

    shape: str
    total_in: int
    cache_read: int
    cache_write: int
    uncached_in: int
    output: int
    reasoning: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cost_usd: float | None = None
    miss_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def hit_rate(self) -> float:
        return self.cache_read / self.total_in if self.total_in else 0.0


def _int(mapping: Mapping[str, Any] | None, *keys: str) -> int:
    if not isinstance(mapping, Mapping):
        return 0
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return 0


def _sub(mapping: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def detect_shape(usage: Mapping[str, Any]) -> str:
    """``anthropic``, ``openai_chat``, ``openai_responses``, ``openrouter``, ``gemini``, ``deepseek``,
    ``bedrock`` or ``unknown``, from the keys present."""
    keys = set(usage)
    if "prompt_cache_hit_tokens" in keys or "prompt_cache_miss_tokens" in keys:
        return "deepseek"
    if keys & {
        "promptTokenCount",
        "prompt_token_count",
        "cachedContentTokenCount",
        "cached_content_token_count",
        "total_cached_tokens",
    }:
        return "gemini"
    if keys & {"cacheReadInputTokens", "cacheWriteInputTokens", "inputTokens"}:
        return "bedrock"
    if "prompt_tokens" in keys:
        if keys & {"cost", "is_byok", "cost_details"}:
            return "openrouter"
        return "openai_chat"
    if "input_tokens_details" in keys:
        return "openai_responses"
    if keys & {"cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation"} or (
        "input_tokens" in keys and "output_tokens" in keys
    ):
        return "anthropic"
    return "unknown"


def _unwrap(obj: Any) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """The usage mapping inside a response, event list or bare usage dict; and the raw object."""
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        return _from_stream(obj)
    if not isinstance(obj, Mapping):
        raise TypeError(f"expected a usage mapping, got {type(obj).__name__}")
    raw = dict(obj)
    for key in ("usage", "usageMetadata", "usage_metadata"):
        inner = obj.get(key)
        if isinstance(inner, Mapping):
            merged = dict(inner)
            diagnostics = obj.get("diagnostics")
            if isinstance(diagnostics, Mapping):
                merged.setdefault("diagnostics", diagnostics)
            return merged, raw
    message = obj.get("message")
    if isinstance(message, Mapping) and isinstance(message.get("usage"), Mapping):
        return dict(message["usage"]), raw
    return raw, raw


def _from_stream(events: Sequence[Any]) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """Anthropic streaming: input fields from ``message_start``, output from the last ``message_delta``."""
    usage: dict[str, Any] = {}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        if event.get("type") == "message_start":
            usage.update(_sub(_sub(event, "message"), "usage"))
        elif event.get("type") == "message_delta" and isinstance(event.get("usage"), Mapping):
            delta = event["usage"]
            if "output_tokens" in delta:
                usage["output_tokens"] = delta["output_tokens"]
    return usage, {"events": list(events)}


def parse_usage(obj: Any, *, where: str = "usage") -> NormalizedUsage:
    """Parse one recorded usage object (bare, inside a response, or an Anthropic event stream).

    Raises:
        TranscriptError: The object has no recognisable usage shape.
    """
    try:
        usage, raw = _unwrap(obj)
    except TypeError as error:
        raise TranscriptError(where, None, str(error)) from None
    shape = detect_shape(usage)
    if shape == "anthropic":
        read = _int(usage, "cache_read_input_tokens")
        creation = _sub(usage, "cache_creation")
        w5, w1 = _int(creation, "ephemeral_5m_input_tokens"), _int(creation, "ephemeral_1h_input_tokens")
        write = _int(usage, "cache_creation_input_tokens") or (w5 + w1)
        uncached = _int(usage, "input_tokens")
        reason = _sub(_sub(usage, "diagnostics"), "cache_miss_reason").get("type")
        return NormalizedUsage(
            shape,
            read + write + uncached,
            read,
            write,
            uncached,
            _int(usage, "output_tokens"),
            0,
            w5,
            w1,
            None,
            str(reason) if reason else None,
            raw,
        )
    if shape in ("openai_chat", "openrouter"):
        details = _sub(usage, "prompt_tokens_details")
        total = _int(usage, "prompt_tokens")
        read = _int(details, "cached_tokens")
        write = _int(details, "cache_write_tokens", "cache_creation_input_tokens") or _int(
            usage, "cache_creation_input_tokens"
        )
        creation = _sub(details, "cache_creation")
        w5, w1 = _int(creation, "ephemeral_5m_input_tokens"), _int(creation, "ephemeral_1h_input_tokens")
        if not write:
            write = w5 + w1
        reasoning = _int(_sub(usage, "completion_tokens_details"), "reasoning_tokens")
        cost = usage.get("cost")
        return NormalizedUsage(
            shape,
            total,
            read,
            write,
            max(0, total - read - write),
            _int(usage, "completion_tokens"),
            reasoning,
            w5,
            w1,
            float(cost) if isinstance(cost, (int, float)) else None,
            None,
            raw,
        )
    if shape == "openai_responses":
        details = _sub(usage, "input_tokens_details")
        total = _int(usage, "input_tokens")
        read, write = _int(details, "cached_tokens"), _int(details, "cache_write_tokens")
        reasoning = _int(_sub(usage, "output_tokens_details"), "reasoning_tokens")
        return NormalizedUsage(
            shape,
            total,
            read,
            write,
            max(0, total - read - write),
            _int(usage, "output_tokens"),
            reasoning,
            raw=raw,
        )
    if shape == "gemini":
        total = _int(usage, "promptTokenCount", "prompt_token_count", "total_input_tokens")
        read = _int(usage, "cachedContentTokenCount", "cached_content_token_count", "total_cached_tokens")
        output = _int(usage, "candidatesTokenCount", "candidates_token_count", "total_output_tokens")
        thoughts = _int(usage, "thoughtsTokenCount", "thoughts_token_count", "total_thought_tokens")
        return NormalizedUsage(shape, total, read, 0, max(0, total - read), output + thoughts, thoughts, raw=raw)
    if shape == "deepseek":
        hit, miss = _int(usage, "prompt_cache_hit_tokens"), _int(usage, "prompt_cache_miss_tokens")
        total = _int(usage, "prompt_tokens") or hit + miss
        reasoning = _int(_sub(usage, "completion_tokens_details"), "reasoning_tokens")
        return NormalizedUsage(
            shape, total, hit, 0, max(0, total - hit), _int(usage, "completion_tokens"), reasoning, raw=raw
        )
    if shape == "bedrock":
        read, write = _int(usage, "cacheReadInputTokens"), _int(usage, "cacheWriteInputTokens")
        uncached = _int(usage, "inputTokens")
        return NormalizedUsage(
            shape, read + write + uncached, read, write, uncached, _int(usage, "outputTokens"), raw=raw
        )
    raise TranscriptError(where, None, f"unrecognised usage shape with keys {sorted(usage)[:8]}")


def check_invariants(usage: NormalizedUsage) -> list[str]:
    """Violations of the shape's documented invariants (empty when consistent)."""
    problems = []
    if usage.cache_read + usage.cache_write + usage.uncached_in != usage.total_in:
        problems.append("read + write + uncached != total input")
    if usage.cache_write_5m + usage.cache_write_1h not in (0, usage.cache_write):
        problems.append("5m + 1h writes != cache writes")
    raw_usage, _ = _unwrap(usage.raw) if usage.raw else ({}, {})
    if usage.shape == "deepseek":
        details = _sub(raw_usage, "prompt_tokens_details")
        if "cached_tokens" in details and _int(details, "cached_tokens") != usage.cache_read:
            problems.append("prompt_tokens_details.cached_tokens != prompt_cache_hit_tokens")
    return problems
