"""Results of pure functions of a text, kept per distinct text.

A compaction summarises a span that overlaps the previous one's rows: without a memo every pass
scans the same raw tool output with the same regexes again. The functions memoized here depend on
their text argument only, so a remembered result is the result (``tests/engines/test_text_memo.py``
compares each with its plain computation; ``docs/performance.md``, Engines).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

MAX_ENTRIES = 50_000
"""Distinct texts kept per memo; a full memo starts over (a long sweep does not grow without bound)."""
MAX_CHARS = 64_000_000
"""Characters of the texts kept per memo (the keys are usually the rows' own strings, but not always)."""

_MISSING = object()
_MEMOS: list[TextMemo[Any]] = []


def clear_text_memos() -> None:
    """Forget every memo's results (benchmarks time an engine on cold memos)."""
    for memo in _MEMOS:
        memo.clear()


class TextMemo(Generic[T]):
    """``compute(text)`` remembered per distinct text, bounded by entries and characters."""

    __slots__ = ("_chars", "_compute", "_values")

    def __init__(self, compute: Callable[[str], T]) -> None:
        self._compute = compute
        self._values: dict[str, T] = {}
        self._chars = 0
        _MEMOS.append(self)

    def __call__(self, text: str) -> T:
        values = self._values
        found = values.get(text, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        value = self._compute(text)
        if len(values) >= MAX_ENTRIES or self._chars + len(text) > MAX_CHARS:
            values.clear()
            self._chars = 0
        values[text] = value
        self._chars += len(text)
        return value

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        """Forget every remembered result."""
        self._values.clear()
        self._chars = 0
