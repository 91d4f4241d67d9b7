"""``hybrid``: observation masking per request plus an occasional summary (engines.md §5 E4).

``select_context`` masks old tool outputs exactly as ``mask_window``; ``compress`` hands off to an
anchored summary when the (masked) prompt passes ``threshold_fraction`` of the window, or, with the
``jetbrains`` preset, every 43 user turns keeping a 10-turn verbatim tail. The summarizer never sees
the text of outputs the mask already hides (OpenHands pipeline order: cheap maskers first).
Depends on ``contextlab.engines`` (contextlab importable).
"""

from __future__ import annotations

from typing import Any

from agent.context_engine import ContextEngine

from contextlab.engines import parts
from contextlab.engines.handoff import Handoff, extractive_or, is_carrier
from contextlab.engines.masking import engine_mask

TAIL_SHARE = 0.20
"""The handoff tail never holds more than this share of the threshold (as ``summary``), so a
single-turn tool loop still compacts."""

PRESETS: dict[str, dict[str, Any]] = {
    # JetBrains "The Complexity Trap" hybrid: mask with M=10, summarize every N=43 turns, keep 10 turns.
    "jetbrains": {"every_n_turns": 43, "tail_turns": 10, "threshold_fraction": 0.95},
}


class HybridEngine(ContextEngine):
    """Masking every request (E1) plus a summary handoff (E3) at a token threshold or every N turns.

    Args:
        preset: ``"jetbrains"`` or None.
        window_m, polling, keep_first_observation, exempt_tools: As ``mask_window``.
        threshold_fraction: Share of the window where the summary fires (default 0.75, above the masked size).
        every_n_turns: Also summarize after this many user turns since the last summary.
        tail_messages: Verbatim tail of the handoff in messages (default 20) ...
        tail_turns: ... or in user turns (JetBrains: 10).
        summary_mode: ``anchored`` (default) or ``regenerate``.
        summarizer: ``"extractive"`` or an object with ``summarize(SummaryRequest)``.
    """

    def __init__(
        self,
        preset: str | None = None,
        window_m: int = 10,
        polling: int = 1,
        keep_first_observation: bool = True,
        exempt_tools: list[str] | tuple[str, ...] = (),
        threshold_fraction: float | None = None,
        every_n_turns: int | None = None,
        tail_messages: int | None = None,
        tail_turns: int | None = None,
        summary_mode: str = "anchored",
        summarizer: Any = "extractive",
        context_length: int = 0,
    ) -> None:
        if preset is not None and preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
        base = dict(PRESETS[preset]) if preset else {}
        self.preset = preset
        self.window_m = int(window_m)
        self.polling = int(polling)
        self.keep_first_observation = bool(keep_first_observation)
        self.exempt_tools = tuple(exempt_tools)
        self.threshold_fraction = float(
            threshold_fraction if threshold_fraction is not None else base.get("threshold_fraction", 0.75)
        )
        self.threshold_percent = self.threshold_fraction
        every = every_n_turns if every_n_turns is not None else base.get("every_n_turns")
        self.every_n_turns = None if every is None else int(every)
        turns = tail_turns if tail_turns is not None else base.get("tail_turns")
        self.handoff = Handoff(
            mode=summary_mode,
            tail_messages=None if turns is not None else (20 if tail_messages is None else int(tail_messages)),
            tail_turns=None if turns is None else int(turns),
            summarizer=extractive_or(summarizer),
        )
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.threshold_fraction)

    @property
    def name(self) -> str:
        return "hybrid"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        parts.track_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.threshold_tokens > 0 and parts.pressure(self, prompt_tokens) >= self.threshold_tokens

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        if not self.every_n_turns:
            return False
        since = 0
        for message in reversed(messages):
            if is_carrier(message):
                break
            if message.get("role") == "user":
                since += 1
        return since > self.every_n_turns

    def _view(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        return parts.mask_view(
            messages,
            window_m=self.window_m,
            polling=self.polling,
            keep_first_observation=self.keep_first_observation,
            exempt_tools=self.exempt_tools,
        )

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
    ) -> list[dict[str, Any]] | None:
        # Built from the previous request (equal to _view; see contextlab/engines/masking.py).
        mask = engine_mask(
            self,
            window_m=self.window_m,
            polling=self.polling,
            keep_first_observation=self.keep_first_observation,
            exempt_tools=self.exempt_tools,
        )
        return mask.view(request_messages)

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        view = self._view(messages) or messages
        # Rows the mask hides are summarized as their placeholder (keyed by identity, this pass only;
        # local, so concurrent passes on one instance cannot see each other's rows).
        masked = {id(o): v for o, v in zip(messages, view, strict=True) if o is not v}
        self.handoff.max_tail_tokens = int(self.threshold_tokens * TAIL_SHARE) if self.threshold_tokens > 0 else None
        result = self.handoff.compress(
            messages,
            focus_topic=focus_topic,
            force=force,
            span_filter=lambda span: [masked.get(id(m), m) for m in span],
        )
        if result is not messages:
            self.compression_count += 1
        return result


def register(ctx: Any) -> None:
    """General-plugin registration (the host's ``register(ctx)`` path)."""
    ctx.register_context_engine(HybridEngine())
