"""Read-only views of lists that only grow: a request's messages without copying the history.

The host keeps its per-row lists (wire forms, exact counts, the sanitized request) append-only
between replacements, so the first ``n`` items of such a list never change once handed out. A
request can then be a view of them made in O(1), where a list copy per request made a long replay
quadratic (``docs/performance.md``, "Requests as views"). Whoever owns a list keeps the promise: it
only appends to it, and starts a new list instead of changing or removing an item a view may show.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import TypeVar, overload

T = TypeVar("T")


class GrowingView(Sequence[T]):
    """``head + items[:n] + tail`` as an immutable sequence, built in O(1).

    ``head`` and ``tail`` are short fixed parts (a system row in front, a pending merged row at the
    end); ``items`` is a list its owner only appends to. Indexing is O(1); a slice is a new list of
    just the items it covers, so reading the suffix a request added costs the suffix.
    """

    __slots__ = ("_head", "_items", "_len", "_n", "_tail")

    def __init__(self, items: list[T], n: int, head: Sequence[T] = (), tail: Sequence[T] = ()) -> None:
        self._items = items
        self._n = n
        self._head = head
        self._tail = tail
        self._len = len(head) + n + len(tail)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._slice(index)
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"{type(self).__name__} index out of range")
        head = len(self._head)
        if index < head:
            return self._head[index]
        index -= head
        if index < self._n:
            return self._items[index]
        return self._tail[index - self._n]

    def _slice(self, index: slice) -> list[T]:
        start, stop, step = index.indices(self._len)
        if step != 1:
            return list(self)[index]
        if start >= stop:
            return []
        head, n = len(self._head), self._n
        out: list[T] = list(self._head[start:stop]) if start < head else []
        first, last = max(start - head, 0), min(stop - head, n)
        if first < last:
            out += self._items[first:last]
        if stop > head + n:
            out += self._tail[max(start - head - n, 0) : stop - head - n]
        return out

    def __iter__(self) -> Iterator[T]:
        return chain(self._head, islice(self._items, self._n), self._tail)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=False))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # items may be mutable rows: not hashable, like a list

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"
