"""``mask_window``: observation masking per request (engines.md §5 E1).

Every request sees the conversation with all but the newest ``window_m`` tool outputs replaced by
``Old environment output: (<n> lines omitted)``; the persisted history is never touched. Only when
the masked request itself passes the hard cap (0.95 x window) does ``compress`` drop the oldest safe
groups, counting a compaction. Depends on ``contextlab.engines.parts`` (contextlab importable).
"""

from __future__ import annotations

from typing import Any

from agent.context_engine import ContextEngine

from contextlab.engines import parts
from contextlab.engines.masking import IncrementalMask, engine_mask


class MaskWindowEngine(ContextEngine):
    """Observation masking (SWE-agent / JetBrains): keep the newest ``window_m`` tool outputs per request.

    Args:
        window_m: Tool outputs kept verbatim (JetBrains: 10).
        polling: Re-mask only every ``polling`` tool rows (1 = paper-faithful; 5 = cache-friendlier).
        keep_first_observation: Never mask the first tool output (SWE-agent's task template).
        exempt_tools: Tool names never masked (e.g. an engine's own recall tools).
        mask_inputs: Also replace the masked calls' arguments by their size.
        hard_cap_fraction: Fraction of the window at which the fallback truncation fires.
        truncate_to_fraction: Fraction of the window the fallback truncates down to.
    """

    def __init__(
        self,
        window_m: int = 10,
        polling: int = 1,
        keep_first_observation: bool = True,
        exempt_tools: list[str] | tuple[str, ...] = (),
        mask_inputs: bool = False,
        hard_cap_fraction: float = 0.95,
        truncate_to_fraction: float = 0.5,
        context_length: int = 0,
    ) -> None:
        if window_m < 0 or polling < 1:
            raise ValueError(f"window_m must be >= 0 and polling >= 1, got {window_m}, {polling}")
        if not 0 < truncate_to_fraction < hard_cap_fraction <= 1:
            raise ValueError("need 0 < truncate_to_fraction < hard_cap_fraction <= 1")
        self.window_m = int(window_m)
        self.polling = int(polling)
        self.keep_first_observation = bool(keep_first_observation)
        self.exempt_tools = tuple(exempt_tools)
        self.mask_inputs = bool(mask_inputs)
        self.hard_cap_fraction = float(hard_cap_fraction)
        self.truncate_to_fraction = float(truncate_to_fraction)
        self.threshold_percent = self.hard_cap_fraction
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.hard_cap_fraction)
        self._tokens = parts.TokenEstimator()

    @property
    def name(self) -> str:
        return "mask_window"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        parts.track_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        # Real usage measures the masked request the provider saw, so this fires only when the
        # masked view itself no longer fits.
        return self.threshold_tokens > 0 and parts.pressure(self, prompt_tokens) >= self.threshold_tokens

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
    ) -> list[dict[str, Any]] | None:
        # Built from the previous request (equal to parts.mask_view; see contextlab/engines/masking.py).
        return self._masker().view(request_messages)

    def _masker(self) -> IncrementalMask:
        return engine_mask(
            self,
            window_m=self.window_m,
            polling=self.polling,
            keep_first_observation=self.keep_first_observation,
            exempt_tools=self.exempt_tools,
            mask_inputs=self.mask_inputs,
        )

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        budget = int(self.context_length * self.truncate_to_fraction) if self.context_length else 0
        if budget <= 0:
            return messages
        # Budget on the masked view: that is what the next request will carry.
        view = (
            parts.mask_view(
                messages,
                window_m=self.window_m,
                polling=self.polling,
                keep_first_observation=self.keep_first_observation,
                exempt_tools=self.exempt_tools,
            )
            or messages
        )
        kept = parts.truncate_to_budget(view, budget, self._tokens)
        if kept is view:
            return messages
        # Return the persisted (unmasked) rows that survived: masking stays a per-request view.
        survivors = {id(m) for m in kept}
        result = [orig for orig, shown in zip(messages, view, strict=True) if id(shown) in survivors]
        if len(result) == len(messages):
            return messages
        self.compression_count += 1
        return result


def register(ctx: Any) -> None:
    """General-plugin registration (the host's ``register(ctx)`` path)."""
    ctx.register_context_engine(MaskWindowEngine())
