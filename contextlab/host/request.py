"""Request assembly in the host's order: system + history → ``select_context`` (fail-open) → wire
form → sanitizers. The prompt-cache plan is applied last, by the cache model, on this result."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from contextlab.engine import ContextEngine, Message, overrides
from contextlab.messages import (
    Violation,
    WireCache,
    clone_messages,
    sanitize_request,
    validate_messages,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AssembledRequest:
    """One provider request as the host would send it.

    Attributes:
        messages: Final wire messages, system prompt first.
        selected: ``select_context`` returned a list the host accepted.
        rejection: Why a ``select_context`` result was refused (fail-open), else None.
        violations: Structural violations in the engine-shaped request, before the sanitizers.
        engine_ms: Time spent inside ``select_context``.
    """

    messages: list[Message]
    selected: bool
    rejection: str | None
    violations: list[Violation]
    engine_ms: float


class RequestAssembler:
    """Builds requests for one replay; memoizes wire forms so unchanged messages stay one object."""

    def __init__(self, engine: ContextEngine, *, strict: bool = False) -> None:
        self._engine = engine
        self._strict = strict
        self._wire = WireCache()
        self._selects = overrides(engine, "select_context")

    def wire(self, message: Message) -> Message:
        return self._wire.wire(message)

    def assemble(
        self,
        system_prompt: str | None,
        history: list[Message],
        incoming_message: Message | None,
        budget_tokens: int,
    ) -> AssembledRequest:
        prefix: list[Message] = [{"role": "system", "content": system_prompt}] if system_prompt else []
        request = prefix + history
        selected, rejection, engine_ms = False, None, 0.0
        if self._selects:
            started = time.perf_counter()
            try:
                result = self._engine.select_context(
                    clone_messages(request),
                    conversation_messages=clone_messages(history),
                    incoming_message=clone_messages([incoming_message])[0] if incoming_message else None,
                    budget_tokens=budget_tokens,
                )
            except Exception as error:  # fail-open: a broken engine is never worse than none
                result, rejection = None, f"exception: {type(error).__name__}: {error}"
                log.warning("select_context raised %s; keeping the original request", rejection)
            engine_ms = (time.perf_counter() - started) * 1000
            if result is not None and rejection is None:
                rejection = self._check_selection(result, prefix)
                if rejection is None:
                    request, selected = result, True
                else:
                    log.warning("select_context result refused (%s); keeping the original request", rejection)
        violations = validate_messages(request)
        final = sanitize_request([self.wire(m) for m in request])
        return AssembledRequest(final, selected, rejection, violations, engine_ms)

    def _check_selection(self, result: object, prefix: list[Message]) -> str | None:
        """Why a selection is refused, or None. Only a non-empty list of dicts is accepted."""
        if not isinstance(result, list):
            return f"not a list ({type(result).__name__})"
        if not result:
            return "empty list"
        if not all(isinstance(m, dict) for m in result):
            return "list contains non-dict elements"
        if not self._strict:
            return None
        if prefix:
            first = result[0]
            if first.get("role") != "system" or first.get("content") != prefix[0]["content"]:
                return "strict: the system prompt was replaced or removed"
        for i, message in enumerate(result[len(prefix) :], start=len(prefix)):
            if message.get("role") == "system":
                return f"strict: system message injected at position {i}"
            if message.get("role") == "tool" and not message.get("tool_call_id"):
                return f"strict: tool row without tool_call_id at position {i}"
        return None
