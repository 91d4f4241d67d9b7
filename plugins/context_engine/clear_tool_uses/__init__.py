"""``clear_tool_uses``: threshold clearing of old tool results with hysteresis (engines.md §5 E2).

The client-side, sticky rendition of Anthropic's ``clear_tool_uses`` context edit: once the history
passes the trigger, the oldest tool results (except the newest ``keep`` and excluded tools) are
replaced by a fixed placeholder until the history is ``clear_at_least`` tokens under the trigger.
Cleared rows stay cleared, so committed bytes never change between clearing events. Anthropic
applies its edit server-side on every request; this is the cache-friendly reading of it.
Depends on ``contextlab.engines.parts`` (contextlab importable).
"""

from __future__ import annotations

from typing import Any

from agent.context_engine import ContextEngine

from contextlab.engines import parts

from .tool_rows import ToolRows

RECALL_TOOLS = ("lcm_grep", "lcm_describe", "lcm_expand", "history_search", "memory")


class ClearToolUsesEngine(ContextEngine):
    """Threshold tool-result clearing (Anthropic context editing, opencode prune, Hermes prune).

    Args:
        trigger_tokens: Absolute trigger (Anthropic: 100,000).
        trigger_fraction: Trigger as a fraction of the window; the lower of the two applies.
        keep: Newest tool results never cleared (Anthropic: 3).
        protect_tokens: If set, protect the newest tool results up to this many tokens instead
            (opencode: 40,000).
        clear_at_least: Minimum tokens one clearing event must free, else nothing is committed
            (opencode ``PRUNE_MINIMUM``: 20,000).
        exclude_tools: Tool names never cleared (recall tools, memory).
        clear_tool_inputs: Also replace the cleared calls' arguments by their size.
        placeholder: ``"hermes"`` (sizes and call id) or ``"langchain"`` (``[cleared]``).
        hard_cap_fraction: Fraction of the window where ``compress`` (clear everything, then truncate) fires.
    """

    def __init__(
        self,
        trigger_tokens: int = 100_000,
        trigger_fraction: float = 0.5,
        keep: int = 3,
        protect_tokens: int | None = None,
        clear_at_least: int = 20_000,
        exclude_tools: list[str] | tuple[str, ...] = RECALL_TOOLS,
        clear_tool_inputs: bool = False,
        placeholder: str = "hermes",
        hard_cap_fraction: float = 0.95,
        context_length: int = 0,
    ) -> None:
        if placeholder not in ("hermes", "langchain"):
            raise ValueError(f"placeholder must be 'hermes' or 'langchain', got {placeholder!r}")
        if keep < 0 or clear_at_least < 0 or trigger_tokens <= 0:
            raise ValueError("keep and clear_at_least must be >= 0 and trigger_tokens > 0")
        self.trigger_tokens = int(trigger_tokens)
        self.trigger_fraction = float(trigger_fraction)
        self.keep = int(keep)
        self.protect_tokens = None if protect_tokens is None else int(protect_tokens)
        self.clear_at_least = int(clear_at_least)
        self.exclude_tools = tuple(exclude_tools)
        self.clear_tool_inputs = bool(clear_tool_inputs)
        self.placeholder = placeholder
        self.hard_cap_fraction = float(hard_cap_fraction)
        self.threshold_percent = self.hard_cap_fraction
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.hard_cap_fraction)
        self._tokens = parts.TokenEstimator()
        self._tool_rows = ToolRows(self._is_cleared)  # kept from call to call (tool_rows.py)

    @property
    def name(self) -> str:
        return "clear_tool_uses"

    @property
    def trigger(self) -> int:
        """Tokens at which clearing starts: the lower of the absolute and the fractional trigger."""
        if self.context_length > 0:
            return min(self.trigger_tokens, int(self.trigger_fraction * self.context_length))
        return self.trigger_tokens

    def update_from_response(self, usage: dict[str, Any]) -> None:
        parts.track_usage(self, usage)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.threshold_tokens > 0 and parts.pressure(self, prompt_tokens) >= self.threshold_tokens

    # ------------------------------------------------------------------ clearing

    def _placeholder(self, row: dict[str, Any]) -> str:
        if self.placeholder == "langchain":
            return "[cleared]"
        return parts.clear_placeholder(parts.content_text(row), str(row.get("tool_call_id") or ""))

    def _is_cleared(self, row: dict[str, Any]) -> bool:
        text = parts.content_text(row)
        return text.startswith(parts.CLEARED_PREFIX) or text == "[cleared]"

    def _candidates(self, messages: list[dict[str, Any]]) -> list[int]:
        """Clearable tool rows, oldest first: not protected, not excluded, not already cleared."""
        scan = self._tool_rows
        scan.update(messages)
        rows = scan.positions
        # The protected rows are the newest tool rows: the candidates are the tool rows before the
        # first protected one.
        end = len(rows)
        if self.protect_tokens is not None:
            spent = 0
            for k in range(len(rows) - 1, -1, -1):
                spent += self._tokens.message(messages[rows[k]])
                if spent > self.protect_tokens:
                    break
                end = k
        elif self.keep:
            end = max(0, len(rows) - self.keep)
        excluded = self.exclude_tools
        names, cleared = scan.names, scan.cleared
        return [rows[k] for k in range(end) if not cleared[k] and names[k] not in excluded]

    def _clear(
        self, messages: list[dict[str, Any]], target: int | None, tokens: int
    ) -> tuple[list[dict[str, Any]], int, int]:
        """Clear oldest candidates until ``tokens - freed <= target`` (all of them when target is None)."""
        out = list(messages)
        freed = cleared = 0
        cleared_rows: list[int] = []
        for index in self._candidates(messages):
            if target is not None and tokens - freed <= target:
                break
            row = messages[index]
            new_row = parts.with_content(row, self._placeholder(row))
            gain = self._tokens.message(row) - self._tokens.message(new_row)
            if gain <= 0:
                continue
            out[index] = new_row
            freed += gain
            cleared += 1
            cleared_rows.append(index)
        if self.clear_tool_inputs and cleared_rows:
            parts.clear_inputs_of_rows(out, cleared_rows)
        return out, freed, cleared

    def prune_tool_results_only(
        self, messages: list[dict[str, Any]], current_tokens: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        tokens = int(current_tokens) if current_tokens and current_tokens > 0 else self._tokens.messages(messages)
        trigger = self.trigger
        if tokens < trigger:
            return messages, 0
        out, freed, cleared = self._clear(messages, trigger - self.clear_at_least, tokens)
        if cleared == 0 or freed < self.clear_at_least:
            return messages, 0  # hysteresis: a small reclaim is not worth a cache break
        return out, cleared

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        # Hard fallback: clear every clearable row, then drop the oldest groups if still too big.
        tokens = self._tokens.messages(messages)
        out, freed, cleared = self._clear(messages, None, tokens)
        budget = self.trigger - self.clear_at_least if self.trigger > self.clear_at_least else self.trigger
        if self.context_length and tokens - freed > budget:
            out = parts.truncate_to_budget(out, budget, self._tokens)
        if cleared == 0 and len(out) == len(messages):
            return messages
        self.compression_count += 1
        return out


def register(ctx: Any) -> None:
    """General-plugin registration (the host's ``register(ctx)`` path)."""
    ctx.register_context_engine(ClearToolUsesEngine())
