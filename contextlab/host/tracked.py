"""Engine copies that say when they are changed (``docs/performance.md``, "Engine hooks").

The host hands engines private clones of its rows and must hand out pristine ones again on the next
call. Comparing every clone with its source before each hand-out cost a C-level ``==`` per row per
call (about 0.3 us per row inside a replay), which made every long replay quadratic. These
containers are ``dict`` and ``list`` subclasses whose mutating methods first record the row they
belong to in a set the host reads, so the host compares only the rows an engine changed.

A subclass is still a ``dict`` / ``list`` for ``isinstance``, JSON and copying. A change made
through a C function that bypasses the methods (``heapq`` on a row's list, ``dict.__setitem__``
called on the class) is not seen: the host then still never reaches its own history (the clones
are separate objects), but the engine may see its own change again on a later call.
"""

from __future__ import annotations

from typing import Any, SupportsIndex

Cell = tuple[set[int], int]
"""Where a change is recorded: the set of changed row positions, and this row's position."""


class _Touches:
    """What both containers do before a mutation: record their row in the cell, if they have one.
    (No slots of its own: a slotted mixin cannot be combined with ``dict`` or ``list``.)"""

    __slots__ = ()

    def _touch(self) -> None:
        cell: Cell | None = getattr(self, "_cell", None)
        if cell is not None:
            cell[0].add(cell[1])


class TrackedDict(_Touches, dict[str, Any]):
    """A row (or a dict inside one) that records its row as changed before any mutation."""

    __slots__ = ("_cell",)

    def __setitem__(self, key: str, value: Any) -> None:
        self._touch()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._touch()
        super().__delitem__(key)

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override,misc]
        self._touch()
        super().__ior__(other)
        return self

    def clear(self) -> None:
        self._touch()
        super().clear()

    def pop(self, *args: Any) -> Any:
        self._touch()
        return super().pop(*args)

    def popitem(self) -> tuple[str, Any]:
        self._touch()
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._touch()
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._touch()
        super().update(*args, **kwargs)


class TrackedList(_Touches, list[Any]):
    """A list inside a row that records its row as changed before any mutation."""

    __slots__ = ("_cell",)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._touch()
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self._touch()
        super().__delitem__(index)

    def __iadd__(self, other: Any) -> TrackedList:  # type: ignore[override,misc]
        self._touch()
        super().__iadd__(other)
        return self

    def __imul__(self, count: SupportsIndex) -> TrackedList:
        self._touch()
        super().__imul__(count)
        return self

    def append(self, value: Any) -> None:
        self._touch()
        super().append(value)

    def extend(self, values: Any) -> None:
        self._touch()
        super().extend(values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._touch()
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._touch()
        return super().pop(index)

    def remove(self, value: Any) -> None:
        self._touch()
        super().remove(value)

    def clear(self) -> None:
        self._touch()
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._touch()
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._touch()
        super().reverse()


def tracked_clone(value: Any, cell: Cell) -> Any:
    """A structural clone of ``value`` (strings shared, as in ``clone_messages``) whose dicts and
    lists record ``cell`` when they are changed."""
    if isinstance(value, dict):
        out: Any = TrackedDict(
            {k: tracked_clone(v, cell) if isinstance(v, dict | list) else v for k, v in value.items()}
        )
    elif isinstance(value, list):
        out = TrackedList([tracked_clone(v, cell) if isinstance(v, dict | list) else v for v in value])
    else:
        return value
    out._cell = cell
    return out
