"""``summary``: summary handoff at a threshold (engines.md §5 E3).

``should_compress`` fires at ``threshold_fraction`` of the window; ``compress`` keeps the head (first
user message), replaces the middle by one ``[CONTEXT SUMMARY]`` user message, and keeps a verbatim
tail, all cut at safe indices. ``summary_mode`` is ``anchored`` (Factory: sections merged as keyed
sets) or ``regenerate`` (Claude Code / Codex / OpenHands: the previous summary is re-read as text, so
loss compounds). The default summarizer is contextlab's deterministic extractive one.
Depends on ``contextlab.engines`` (contextlab importable).
"""

from __future__ import annotations

from typing import Any

from agent.context_engine import ContextEngine

from contextlab.engines import parts
from contextlab.engines.handoff import Handoff, extractive_or

from .presets import PRESETS

HERMES_FLOOR_WINDOW = 512_000
HERMES_CAP_TOKENS = 256_000
TAIL_SHARE = 0.20
"""The verbatim tail never holds more than this share of the threshold (Hermes' legacy tail budget,
``threshold x summary_target_ratio``): a message-count tail alone can cover a whole single-turn tool
loop and make every pass a no-op."""


def lean_tail_tokens(window: int) -> int:
    """Hermes lean tail: ``clamp(0.025 x window, 10,000, 25,000)`` tokens."""
    return max(10_000, min(25_000, int(0.025 * window)))


class SummaryEngine(ContextEngine):
    """Summary handoff; ``preset`` picks a system to imitate (factory, claude_code, codex, hermes, openhands).

    Args:
        preset: A name from ``PRESETS``; explicit arguments override its values.
        threshold_fraction: Share of the window where ``should_compress`` fires (default 0.75).
        summary_mode: ``anchored`` or ``regenerate``.
        keep_first: Non-system messages always kept at the head (at least through the first user message).
        tail_messages: Newest messages kept verbatim (default 20).
        tail_tokens: Newest rough tokens kept verbatim instead (``"lean"``: Hermes'
            clamp(0.025 x window, 10k, 25k)).
        keep_user_tokens: Also keep the span's newest user messages verbatim up to this many tokens (Codex).
        max_events: Also compress when the history holds more messages than this (OpenHands).
        summarizer: ``"extractive"``, ``"llm"`` (record/replay LLM behind the LCM acceptance rule) or an
            object with ``summarize(SummaryRequest)``.
    """

    def __init__(
        self,
        preset: str | None = None,
        threshold_fraction: float | None = None,
        summary_mode: str | None = None,
        keep_first: int | None = None,
        tail_messages: int | None = None,
        tail_tokens: int | str | None = None,
        keep_user_tokens: int | None = None,
        max_events: int | None = None,
        summarizer: Any = "extractive",
        context_length: int = 0,
    ) -> None:
        if preset is not None and preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
        base: dict[str, Any] = dict(PRESETS["factory"])
        if preset is not None:
            base = {**base, **PRESETS[preset]}
            if "tail_tokens" in PRESETS[preset]:
                base.pop("tail_messages", None)
        given = {
            "threshold_fraction": threshold_fraction,
            "summary_mode": summary_mode,
            "keep_first": keep_first,
            "tail_messages": tail_messages,
            "tail_tokens": tail_tokens,
            "keep_user_tokens": keep_user_tokens,
            "max_events": max_events,
        }
        config = {**base, **{k: v for k, v in given.items() if v is not None}}
        self.preset = preset
        self.threshold_fraction = float(config["threshold_fraction"])
        if not 0 < self.threshold_fraction <= 1:
            raise ValueError(f"threshold_fraction must be in (0, 1], got {self.threshold_fraction}")
        self.threshold_percent = self.threshold_fraction
        self.hermes_threshold = bool(config.get("hermes_threshold", False))
        self.max_events = config.get("max_events")
        self._tail_tokens_spec = config.get("tail_tokens")
        tail_messages = config.get("tail_messages") if self._tail_tokens_spec is None else None
        self.handoff = Handoff(
            mode=str(config["summary_mode"]),
            keep_first=int(config.get("keep_first") or 0),
            tail_messages=None if tail_messages is None else int(tail_messages),
            tail_tokens=None,
            keep_user_tokens=int(config.get("keep_user_tokens") or 0),
            summarizer=extractive_or(summarizer),
        )
        if self.handoff.tail_messages is None and self._tail_tokens_spec is None:
            self.handoff.tail_messages = 20
        self.context_length = int(context_length)
        self._apply_window()

    @property
    def name(self) -> str:
        return "summary"

    def _apply_window(self) -> None:
        window = self.context_length
        fraction = float(self.threshold_percent)
        if self.hermes_threshold and window and window < HERMES_FLOOR_WINDOW:
            fraction = max(fraction, 0.75)
        threshold = int(window * fraction)
        if self.hermes_threshold:
            threshold = min(threshold, HERMES_CAP_TOKENS)
        self.threshold_tokens = threshold
        spec = self._tail_tokens_spec
        if spec == "lean":
            self.handoff.tail_tokens = lean_tail_tokens(window) if window else None
        elif spec is not None:
            self.handoff.tail_tokens = int(spec)

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        # The host's rule first (threshold_percent, per-model overrides), then the preset's extras.
        super().update_model(model, context_length, base_url, api_key, provider, api_mode)
        self._apply_window()

    def update_from_response(self, usage: dict[str, Any]) -> None:
        parts.track_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.threshold_tokens > 0 and parts.pressure(self, prompt_tokens) >= self.threshold_tokens

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        # OpenHands condenses on event count, whatever the token count.
        return self.max_events is not None and len(messages) > int(self.max_events)

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        self.handoff.max_tail_tokens = int(self.threshold_tokens * TAIL_SHARE) if self.threshold_tokens > 0 else None
        result = self.handoff.compress(messages, focus_topic=focus_topic, force=force)
        if result is not messages:
            self.compression_count += 1
        return result


def register(ctx: Any) -> None:
    """General-plugin registration (the host's ``register(ctx)`` path)."""
    ctx.register_context_engine(SummaryEngine())
