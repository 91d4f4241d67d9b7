"""The sanitized request, kept up to date row by row (``docs/performance.md``, "Adjacent user rows").

:func:`contextlab.messages.sanitize_request` is a pass over the whole request: orphaned tool results
dropped, unanswered calls answered with the host's stub results, thinking-only rows dropped, adjacent
user rows merged. Once a
history needs it (Claude Code logs routinely hold two user rows in a row), re-running it on every
request makes a replay quadratic. This class produces the same list incrementally:

* each row's own rewrite (:func:`contextlab.messages.sanitize_row`) depends on the rest of the
  request only through two growing id sets (tool results seen, calls seen), so it is computed once
  and redone only for the rows a newly seen id concerns (usually the last assistant, when its
  results arrive);
* the merge of adjacent user rows is a left fold; a checkpoint of the fold state before every row
  lets a change at row ``j`` re-fold from ``j`` only. A merged row is built once per change of its run.

Output rows carry their exact and rough token counts, so a request costs O(changed rows) in Python
handed out as a view of the output lists (``contextlab/host/growing.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from contextlab.engine import Message
from contextlab.host.growing import GrowingView
from contextlab.messages import merge_user_messages, row_call_ids, sanitize_row, unanswered_call_stubs
from contextlab.tokens import ExactCounter, RoughCounter

_UNCOUNTED = (-1, -1)
"""Counts of a merged user row not computed yet (computed once, when the row is sent)."""


class Emitted(NamedTuple):
    """One sanitized request."""

    messages: Sequence[Message]
    tokens: Sequence[int]
    """Exact tokens of each message."""
    tokens_total: int
    rough_total: int
    """The rough estimate of all messages."""
    unchanged: int
    """How many leading messages are the same objects as in the previous emit (0 on the first)."""


class IncrementalSanitizer:
    """``sanitize_request`` of a list that only grows, fed one wire row at a time."""

    def __init__(self, exact: ExactCounter, rough: RoughCounter) -> None:
        self._exact = exact
        self._rough = rough
        self._inputs: list[Message] = []
        self._input_tokens: list[int] = []
        self._input_rough: list[int] = []
        # Each row as sent: itself, None (dropped), or a tuple (an assistant row, then the stub
        # results of its unanswered calls).
        self._stage: list[Message | tuple[Message, ...] | None] = []
        self._answered: set[str] = set()
        self._called: set[str] = set()
        # Rows whose rewrite may still change: by the id that would change it.
        self._waiting_answer: dict[str, list[int]] = {}
        self._waiting_call: dict[str, list[int]] = {}
        # The merge fold: committed output, and the pending user row (the fold state).
        self._out: list[Message] = []
        self._out_tokens: list[int] = []
        self._out_rough: list[int] = []
        self._out_tokens_sum = 0  # running sums of the committed output, so a request is not re-summed
        self._out_rough_sum = 0
        self._pending: Message | None = None
        self._pending_counts: tuple[int, int] = (0, 0)
        self._checkpoint_len: list[int] = []
        self._checkpoint_pending: list[tuple[Message | None, tuple[int, int]]] = []
        self._dirty_from: int | None = None
        self._unstaged: list[int] = []  # rows whose rewrite is redone at the next fold, not per change
        self._calls: list[list[str]] = []  # each row's call ids
        self._folded = 0  # rows the fold has processed
        self._stable = 0  # committed output rows unchanged since the last emit
        self._last_emit: Sequence[Message] | None = None
        self._handed_out = 0  # leading rows of ``_out`` an emitted view shows (they must not change)

    def feed(self, wire: Message, tokens: int, rough: int) -> None:
        """Add the next row (a wire message with its exact and rough counts; exact tokens below 0:
        not counted yet, counted if the row is sent unmerged)."""
        k = len(self._inputs)
        self._inputs.append(wire)
        self._input_tokens.append(tokens)
        self._input_rough.append(rough)
        self._stage.append(None)
        self._checkpoint_len.append(0)
        self._checkpoint_pending.append((None, (0, 0)))
        answers, calls = row_call_ids(wire)
        self._calls.append(calls)
        for call_id in answers:
            if call_id not in self._answered:
                self._answered.add(call_id)
                waiting = self._waiting_answer.pop(call_id, None)
                if waiting:
                    self._mark(waiting)
        for call_id in calls:
            if call_id not in self._called:
                self._called.add(call_id)
                waiting = self._waiting_call.pop(call_id, None)
                if waiting:
                    self._mark(waiting)
        if self._dirty_from is None:  # the new row itself (the highest index): _mark inlined
            self._dirty_from = k
        self._unstaged.append(k)

    def _mark(self, rows: tuple[int, ...] | list[int]) -> None:
        # The rewrite itself waits for the next fold: an assistant row's calls are usually answered
        # by the rows fed right after it, so staging it now would build stub results for nothing.
        for row in rows:
            if self._dirty_from is None or row < self._dirty_from:
                self._dirty_from = row
            self._unstaged.append(row)

    def _restage(self, k: int) -> None:
        wire = self._inputs[k]
        role = wire.get("role") if isinstance(wire, dict) else None
        if role == "tool":
            call_id = wire.get("tool_call_id")
            if call_id and str(call_id) in self._called:  # what sanitize_row keeps as is
                self._stage[k] = wire
                return
        elif role == "assistant":
            calls = self._calls[k]
            if calls and all(c in self._answered for c in calls):  # has calls: not thinking-only
                self._stage[k] = wire
                return
        staged = sanitize_row(wire, self._answered, self._called)
        self._stage[k] = staged
        if not isinstance(wire, dict):
            return
        if staged is not None and role == "assistant":
            stubs = unanswered_call_stubs(staged, self._answered)
            if stubs:
                self._stage[k] = (staged, *stubs)
        if wire.get("role") == "tool":
            call_id = wire.get("tool_call_id")
            if call_id and str(call_id) not in self._called:
                self._waiting_call.setdefault(str(call_id), []).append(k)
            return
        for call_id in self._calls[k]:
            if call_id not in self._answered:
                self._waiting_answer.setdefault(call_id, []).append(k)

    def _counts(self, row: Message, k: int) -> tuple[int, int]:
        if row is self._inputs[k]:
            tokens = self._input_tokens[k]
            if tokens < 0:  # fed uncounted (a user row: see WorkingHistory.append)
                self._input_tokens[k] = tokens = self._exact.count_message(row)
            return tokens, self._input_rough[k]
        return self._exact.message(row), self._rough.message(row)

    def _refold(self) -> None:
        if self._unstaged:
            for k in set(self._unstaged):
                self._restage(k)
            self._unstaged = []
        start = self._dirty_from
        if start is None:
            return
        self._dirty_from = None
        out, out_tokens, out_rough = self._out, self._out_tokens, self._out_rough
        if start >= self._folded:
            start = self._folded  # everything before it is folded: continue from the current state
            keep, (pending, counts) = len(out), (self._pending, self._pending_counts)
        else:
            keep, (pending, counts) = self._checkpoint_len[start], self._checkpoint_pending[start]
        self._out_tokens_sum -= sum(out_tokens[keep:])
        self._out_rough_sum -= sum(out_rough[keep:])
        if keep < self._handed_out:
            # An emitted request is a view of these lists: start new ones rather than change what it shows.
            out, out_tokens = self._out, self._out_tokens = out[:keep], out_tokens[:keep]
            self._handed_out = 0
        else:
            del out[keep:], out_tokens[keep:]
        del out_rough[keep:]
        added_tokens = added_rough = 0
        self._stable = min(self._stable, keep)
        inputs, input_tokens, input_rough, stage = self._inputs, self._input_tokens, self._input_rough, self._stage
        checkpoint_len, checkpoint_pending = self._checkpoint_len, self._checkpoint_pending
        for k in range(start, len(inputs)):
            checkpoint_len[k] = len(out)
            checkpoint_pending[k] = (pending, counts)
            staged = stage[k]
            if staged is None:
                continue
            stubs: tuple[Message, ...] = ()
            if isinstance(staged, tuple):  # an assistant row and its stub results: never merged
                row, stubs = staged[0], staged[1:]
            else:
                row = staged
            if row.get("role") == "user" and isinstance(row.get("content"), str):  # is_user_text, inlined
                if pending is None:
                    # Counted when it is sent: the next row may merge into it.
                    pending, counts = row, _UNCOUNTED
                else:
                    # Counted when the merged row is sent, not per merge step: a run of k user rows
                    # would otherwise tokenize k growing texts nobody sends.
                    pending, counts = merge_user_messages(pending, row), _UNCOUNTED
                continue
            if pending is not None:
                if counts is _UNCOUNTED:
                    counts = self._merged_counts(pending)
                out.append(pending)
                out_tokens.append(counts[0])
                out_rough.append(counts[1])
                added_tokens += counts[0]
                added_rough += counts[1]
                pending = None
            if row is inputs[k] and input_tokens[k] >= 0:  # the row as fed, counted: _counts inlined
                tokens, rough = input_tokens[k], input_rough[k]
            else:
                tokens, rough = self._counts(row, k)
            out.append(row)
            out_tokens.append(tokens)
            out_rough.append(rough)
            added_tokens += tokens
            added_rough += rough
            for stub in stubs:
                tokens, rough = self._merged_counts(stub)  # content-memoized: one count per distinct stub
                out.append(stub)
                out_tokens.append(tokens)
                out_rough.append(rough)
                added_tokens += tokens
                added_rough += rough
        self._out_tokens_sum += added_tokens
        self._out_rough_sum += added_rough
        self._pending, self._pending_counts = pending, counts
        self._folded = len(self._inputs)

    def _merged_counts(self, merged: Message) -> tuple[int, int]:
        return self._exact.message(merged), self._rough.message(merged)

    def emit(self) -> Emitted:
        """The sanitized request, as O(1) views of the output lists (the totals are kept as rows change)."""
        self._refold()
        n = len(self._out)
        tokens_total, rough_total = self._out_tokens_sum, self._out_rough_sum
        pending: tuple[Message, ...] = ()
        pending_tokens: tuple[int, ...] = ()
        if self._pending is not None:
            if self._pending_counts is _UNCOUNTED:
                # The fold state's checkpoints keep the uncounted marker; only the live state is counted.
                self._pending_counts = self._merged_counts(self._pending)
            pending, pending_tokens = (self._pending,), (self._pending_counts[0],)
            tokens_total += self._pending_counts[0]
            rough_total += self._pending_counts[1]
        messages = GrowingView(self._out, n, tail=pending)
        tokens = GrowingView(self._out_tokens, n, tail=pending_tokens)
        self._handed_out = n
        unchanged = self._stable if self._last_emit is not None else 0
        self._stable = n
        self._last_emit = messages
        return Emitted(messages, tokens, tokens_total, rough_total, unchanged)

    @property
    def last_emit(self) -> Sequence[Message] | None:
        """The list the previous :meth:`emit` returned."""
        return self._last_emit
