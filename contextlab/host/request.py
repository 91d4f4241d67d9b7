"""Request assembly in the host's order: system + history → ``select_context`` (fail-open) → wire
form → sanitizers. The prompt-cache plan is applied last, by the cache model, on this result."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from contextlab.engine import ContextEngine, Message, overrides
from contextlab.host.growing import GrowingView
from contextlab.host.history import WorkingHistory
from contextlab.host.memo import MessageMemo
from contextlab.host.selection_structure import SelectionStructure
from contextlab.host.validity import selection_problem
from contextlab.messages import Violation, clone_messages, sanitize_request

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AssembledRequest:
    """One provider request as the host would send it.

    Attributes:
        messages: Final wire messages, system prompt first.
        message_tokens: Exact tokens of each message in ``messages``.
        selected: ``select_context`` returned a list the host accepted.
        rejection: Why a ``select_context`` result was refused (fail-open), else None.
        violations: Structural violations in the engine-shaped request, before the sanitizers.
        engine_ms: Time spent inside ``select_context``.
        extends_history: The request is exactly system + the history's wire rows (no selection, no
            sanitizer rewrite), so it extends any earlier such request of the same history version.
        message_rough: Rough tokens of each message, when already known (else None).
        continues: An earlier request's message list and how many leading messages this request
            shares with it as the same objects (lets the prefix comparison skip them).
    """

    messages: Sequence[Message]
    message_tokens: Sequence[int]
    selected: bool
    rejection: str | None
    violations: list[Violation]
    engine_ms: float
    extends_history: bool = False
    message_rough: list[int] | None = None
    continues: tuple[Sequence[Message], int] | None = None
    tokens_total: int | None = None
    rough_total: int | None = None
    """Rough tokens of all messages, when already known (the rough list may then be absent)."""

    @property
    def message_tokens_total(self) -> int:
        """Exact tokens of all messages (kept as the history changes, else summed)."""
        return self.tokens_total if self.tokens_total is not None else sum(self.message_tokens)

    @property
    def invalid_selection(self) -> bool:
        """``select_context`` returned a malformed value (refused); an exception is not counted here."""
        return self.rejection is not None and not self.rejection.startswith("exception:")


class RequestAssembler:
    """Builds the requests of one replay."""

    def __init__(
        self, engine: ContextEngine, memo: MessageMemo, system_prompt: str | None, *, strict: bool = False
    ) -> None:
        self._engine = engine
        self._memo = memo
        self._strict = strict
        self._selects = overrides(engine, "select_context")
        self.selects = self._selects
        """The engine overrides ``select_context`` (else requests are the plain history)."""
        self._prefix: list[Message] = [{"role": "system", "content": system_prompt}] if system_prompt else []
        self._prefix_wires = [memo.wire(m) for m in self._prefix]
        self._prefix_tokens = [memo.exact(w) for w in self._prefix_wires]
        self._prefix_total = sum(self._prefix_tokens)
        self.prefix_rough = sum(memo.rough(w) for w in self._prefix_wires)
        """Rough tokens of the system row (the host estimates it apart from the messages)."""
        self._structure = SelectionStructure()

    def assemble(
        self, history: WorkingHistory, incoming_message: Message | None, budget_tokens: int
    ) -> AssembledRequest:
        """The request for one provider call over the current history."""
        if not self._selects:
            return self._plain(history)
        views = history.engine_views()
        # The engine's private copies are prepared before the clock starts: host work is not engine_ms.
        request_rows = views.request()
        conversation = views.conversation()
        incoming = clone_messages([incoming_message])[0] if incoming_message else None
        started = time.perf_counter()
        result: object = None
        rejection: str | None = None
        try:
            result = self._engine.select_context(
                request_rows,
                conversation_messages=conversation,
                incoming_message=incoming,
                budget_tokens=budget_tokens,
            )
        except Exception as error:  # fail-open: a broken engine is never worse than none
            rejection = f"exception: {type(error).__name__}: {error}"
            log.warning("select_context raised %s; keeping the original request", rejection)
        engine_ms = (time.perf_counter() - started) * 1000
        if result is None:
            return self._plain(history, rejection=rejection, engine_ms=engine_ms)
        rejection = self._check_selection(result, needs_user=incoming_message is not None)
        if rejection is not None:
            log.warning("select_context result refused (%s); keeping the original request", rejection)
            return self._plain(history, rejection=rejection, engine_ms=engine_ms)
        assert isinstance(result, list)
        # Unchanged rows reuse the host's per-row results; only rows the engine built are counted.
        wires, exact, rough, same_structure, signatures = views.selection(result)
        structure = history.structure
        if same_structure and not structure.needs_sanitizing:
            return AssembledRequest(wires, exact, True, None, structure.violations(), engine_ms, message_rough=rough)
        if same_structure:
            violations = structure.violations()
        else:
            # No tracker for a clean selection; else one resumed at the first changed row.
            violations, needs_sanitizing = self._structure.outcome(result, signatures)
            if not needs_sanitizing:
                return AssembledRequest(wires, exact, True, None, violations, engine_ms, message_rough=rough)
        final = sanitize_request(wires)
        known = {id(w): (t, r) for w, t, r in zip(wires, exact, rough, strict=True)}
        counts = [known.get(id(w)) or (self._memo.exact(w), self._memo.rough(w)) for w in final]
        return AssembledRequest(
            final,
            [t for t, _ in counts],
            True,
            None,
            violations,
            engine_ms,
            message_rough=[r for _, r in counts],
        )

    def plain(self, history: WorkingHistory) -> AssembledRequest:
        """The request without ``select_context`` (what a request the host never sent would hold)."""
        return self._plain(history)

    def _plain(
        self, history: WorkingHistory, *, rejection: str | None = None, engine_ms: float = 0.0
    ) -> AssembledRequest:
        """The unselected request: kept up to date row by row, and handed out as views of the history's
        append-only lists, so this is O(1) (``contextlab/host/growing.py``)."""
        structure = history.structure
        clean = not structure.needs_sanitizing
        if clean:
            wires, exact = history.wires, history.exact
            n = len(wires)
            return AssembledRequest(
                GrowingView(wires, n, self._prefix_wires),
                GrowingView(exact, n, self._prefix_tokens),
                False,
                rejection,
                structure.violations(),
                engine_ms,
                extends_history=True,
                tokens_total=self._prefix_total + history.exact_total,
            )
        previous = history.last_sanitized()
        emitted = history.sanitized(self._prefix_tokens)
        return AssembledRequest(
            emitted.messages,
            emitted.tokens,
            False,
            rejection,
            structure.violations(),
            engine_ms,
            continues=(previous, emitted.unchanged) if previous is not None else None,
            tokens_total=emitted.tokens_total,
            rough_total=emitted.rough_total,
        )

    def _check_selection(self, result: object, *, needs_user: bool) -> str | None:
        """Why a selection is refused, or None: a non-empty list of dicts with a role on every row
        and, when the request had one, a user message (``docs/host-loop.md`` §Malformed results)."""
        if not isinstance(result, list):
            return f"not a list ({type(result).__name__})"
        if not all(map(isinstance, result, repeat(dict))):
            return "list contains non-dict elements"
        problem = selection_problem(result, needs_user=needs_user)
        if problem is not None:
            return problem
        if not self._strict:
            return None
        prefix = self._prefix
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
