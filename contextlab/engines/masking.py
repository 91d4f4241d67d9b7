"""Observation masking built from the previous request (``docs/performance.md``, "Engines").

:func:`contextlab.engines.parts.mask_view` masks a whole request. Between compactions a request is
the previous one plus appended rows, and the masked set only grows (the tool rows numbered up to
``L`` are masked, and ``L`` grows with the number of tool rows). :class:`IncrementalMask` keeps the
previous input and output; when the new input starts with the previous input's very objects it
masks only the rows that crossed the window since, and reuses the previous masked rows (as the same
objects, which lets the host reuse what it computed for them). Anything else (a shorter or
rewritten input, ``mask_inputs``) falls back to the full :func:`~contextlab.engines.parts.mask_view`,
so the result is always equal to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_

from contextlab.engine import Message
from contextlab.engines import parts


class IncrementalMask:
    """``mask_view`` with fixed options, incremental over append-only requests."""

    def __init__(
        self,
        *,
        window_m: int,
        polling: int,
        keep_first_observation: bool = True,
        exempt_tools: Sequence[str] = (),
        mask_inputs: bool = False,
    ) -> None:
        self.window_m = window_m
        self.polling = max(1, polling)
        self.first = 2 if keep_first_observation else 1
        self.exempt = frozenset(exempt_tools)
        self.mask_inputs = mask_inputs
        self._input: list[Message] = []
        self._output: list[Message] = []
        self._tool_rows: list[int] = []
        self._names: dict[int, str] = {}
        self._open_calls: dict[str, str] = {}
        self._limit = 0  # tool rows numbered first..limit are masked in _output

    def _full(self, messages: Sequence[Message]) -> list[Message] | None:
        return parts.mask_view(
            messages,
            window_m=self.window_m,
            polling=self.polling,
            keep_first_observation=self.first == 2,
            exempt_tools=self.exempt,
            mask_inputs=self.mask_inputs,
        )

    def view(self, messages: Sequence[Message]) -> list[Message] | None:
        """The masked copy of ``messages`` (None when nothing is masked), equal to ``mask_view``."""
        if self.mask_inputs:
            return self._full(messages)
        known = len(self._input)
        extends = known <= len(messages) and all(map(is_, self._input, messages[:known]))
        if not extends:
            self._input, self._output, self._tool_rows, self._names, self._open_calls = [], [], [], {}, {}
            self._limit, known = 0, 0
        output = self._output
        for i in range(known, len(messages)):
            self._note(i, messages[i])
            output.append(messages[i])
        self._input = list(messages)
        n = len(self._tool_rows)
        limit = max(0, (n // self.polling) * self.polling - self.window_m)
        for number in range(max(self._limit + 1, self.first), limit + 1):
            index = self._tool_rows[number - 1]
            if self.exempt and self._names.get(index) in self.exempt:
                continue
            row = messages[index]
            output[index] = parts.with_content(row, parts.mask_placeholder(parts.content_text(row)))
        self._limit = max(self._limit, limit)
        if limit < self.first:
            return None
        return list(output)

    def _note(self, i: int, message: Message) -> None:
        """Track tool rows and, for exemptions, the name of the call each answers (as ``tool_row_names``)."""
        role = message.get("role")
        if role == "assistant":
            if self.exempt:
                self._open_calls = {str(c.get("id") or ""): parts.tool_call_name(c) for c in parts.tool_calls(message)}
        elif role == "tool":
            self._tool_rows.append(i)
            if self.exempt:
                self._names[i] = self._open_calls.get(str(message.get("tool_call_id") or ""), "")


def engine_mask(
    engine: object,
    *,
    window_m: int,
    polling: int,
    keep_first_observation: bool = True,
    exempt_tools: Sequence[str] = (),
    mask_inputs: bool = False,
) -> IncrementalMask:
    """The :class:`IncrementalMask` an engine keeps between requests, rebuilt when its options change
    (a grid or ``update_model`` may set new ones on the same instance)."""
    options = (window_m, polling, keep_first_observation, tuple(exempt_tools), mask_inputs)
    cached: tuple[tuple[object, ...], IncrementalMask] | None = getattr(engine, "_mask", None)
    if cached is None or cached[0] != options:
        mask = IncrementalMask(
            window_m=window_m,
            polling=polling,
            keep_first_observation=keep_first_observation,
            exempt_tools=exempt_tools,
            mask_inputs=mask_inputs,
        )
        cached = (options, mask)
        engine._mask = cached  # type: ignore[attr-defined]
    return cached[1]
