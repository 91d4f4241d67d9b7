"""One generic name → object registry: lookup, "did you mean", lazy ``module:attr`` targets, entry points.

Every name contextlab resolves goes through a :class:`Registry`: context engines (built-ins and
plugins, ``contextlab.plugins``), prompt-cache providers and placement policies (``contextlab.cache``),
generated datasets, transcript formats and CLI commands. A registry is a read-only
:class:`~collections.abc.Mapping` (``name in reg``, ``list(reg)``, ``reg[name]``), so the public tables
that were plain dicts keep working, plus:

* :meth:`Registry.lookup`: the object, or one error line ``unknown <kind> 'x'; did you mean 'y'?
  (available: ...)`` of the registry's error class;
* lazy entries: ``register(name, target="package.module:attr")`` imports nothing until the entry is
  looked up, which keeps ``import contextlab.engines.parts`` and ``contextlab --help`` light
  (``docs/architecture.md``);
* entry points: a registry built with ``entry_points="group"`` also offers the names of that Python
  entry-point group, read on first need (a lookup miss or a listing), never at import time; a built-in
  or registered name is never replaced by one.

This module imports nothing of contextlab but its errors, so every layer may use it.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from contextlab.errors import ConfigError

log = logging.getLogger(__name__)

T = TypeVar("T")

SUGGEST_CUTOFF = 0.6
"""Similarity (difflib ratio) a name needs to be offered as "did you mean"."""


def suggestions(word: str, choices: Iterable[str], *, n: int = 3, cutoff: float = SUGGEST_CUTOFF) -> list[str]:
    """The closest names to ``word`` among ``choices``, best first (at most ``n``)."""
    import difflib  # only on an error path

    return difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=cutoff)


def suggest(word: str, choices: Iterable[str], *, n: int = 1, cutoff: float = SUGGEST_CUTOFF) -> str:
    """``"; did you mean 'x'?"`` (or ``'x', 'y'`` with ``n > 1``) for the closest choices, else ``""``."""
    close = suggestions(word, choices, n=n, cutoff=cutoff)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def unknown_message(kind: str, name: str, names: Iterable[str], *, n: int = 1, cutoff: float = SUGGEST_CUTOFF) -> str:
    """``unknown <kind> 'x'; did you mean 'y'? (available: a, b)``: the one line for a name nothing provides."""
    listed = list(names)
    return f"unknown {kind} {name!r}{suggest(name, listed, n=n, cutoff=cutoff)} (available: {', '.join(listed)})"


def load_target(target: str) -> Any:
    """The object ``package.module:attr`` (dotted attributes allowed) names; a bare module path imports the module.

    Raises:
        ImportError, AttributeError: The module or attribute does not exist (callers add context).
    """
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for part in attr.strip().split(".") if attr.strip() else []:
        obj = getattr(obj, part)
    return obj


@dataclass
class Entry(Generic[T]):
    """One registered name.

    Attributes:
        name: The name it is looked up by.
        target: ``module:attr`` it loads from ("" when the object or a loader was given).
        description: One line for listings (read without loading the entry).
        source: Where it came from: ``builtin``, ``registered``, ``entry_point`` (or a registry's own words).
    """

    name: str
    target: str = ""
    description: str = ""
    source: str = "builtin"
    _loader: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    _value: Any = field(default=None, repr=False, compare=False)
    _loaded: bool = field(default=False, repr=False, compare=False)

    @property
    def loaded(self) -> bool:
        """Whether the object was imported/built already."""
        return self._loaded


class Registry(Mapping[str, T]):
    """Names → objects of one kind, looked up with one clear error and loaded at most once each.

    Args:
        kind: What the names name, for messages (``"engine"``, ``"cache provider"``).
        error: The error class :meth:`lookup` raises (:class:`~contextlab.errors.ConfigError` by default).
        entry_points: A Python entry-point group whose names this registry also offers.
        convert: Called as ``convert(obj, name)`` on a freshly loaded object; returns the registry's
            value or raises (e.g. a ``module:function`` that returns the class, or a type check).
        cache: Keep a loaded object for later lookups (a loader that must run per lookup sets False).
    """

    def __init__(
        self,
        kind: str,
        *,
        error: Callable[[str], Exception] = ConfigError,
        entry_points: str | None = None,
        convert: Callable[[Any, str], T] | None = None,
        cache: bool = True,
    ) -> None:
        self.kind = kind
        self.error = error
        self.entry_point_group = entry_points
        self._convert = convert
        self._cache = cache
        self._entries: dict[str, Entry[T]] = {}
        self._entry_points_read = entry_points is None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ registration

    def register(
        self,
        name: str,
        value: T | None = None,
        *,
        target: str = "",
        loader: Callable[[], Any] | None = None,
        description: str = "",
        source: str = "registered",
    ) -> Entry[T]:
        """Add (or replace) ``name``: an object, a lazy ``module:attr`` target, or a loader called on first lookup."""
        if (value is not None) + bool(target) + (loader is not None) != 1:
            raise ValueError(f"{self.kind} {name!r}: give exactly one of value, target, loader")
        entry: Entry[T] = Entry(name, target, description, source, _loader=loader)
        if value is not None:
            entry._value, entry._loaded = value, True
        with self._lock:
            self._entries[name] = entry
        return entry

    def refresh(self) -> None:
        """Forget the entry-point names; the group is read again on next need (a newly installed package)."""
        with self._lock:
            self._entries = {n: e for n, e in self._entries.items() if e.source != "entry_point"}
            self._entry_points_read = self.entry_point_group is None

    # ------------------------------------------------------------------ reading

    def entry(self, name: str) -> Entry[T]:
        """The entry of ``name`` (nothing loaded).

        Raises:
            The registry's error: unknown name, with "did you mean" and the available names.
        """
        found = self._entries.get(name)
        if found is None:
            self._read_entry_points()
            found = self._entries.get(name)
        if found is None:
            raise self.unknown(name)
        return found

    def entries(self) -> list[Entry[T]]:
        """Every entry, in registration order (nothing loaded)."""
        self._read_entry_points()
        return list(self._entries.values())

    def names(self) -> list[str]:
        """Every name, in registration order."""
        return [e.name for e in self.entries()]

    def lookup(self, name: str) -> T:
        """The object registered as ``name``, loaded on first use.

        Raises:
            The registry's error: unknown name ("did you mean"), or a target that fails to load (the
            entry, its target and the reason named; the failure is not cached, so a fix is seen).
        """
        entry = self.entry(name)
        if entry._loaded:
            return entry._value  # type: ignore[no-any-return]
        if not self._cache:
            return self._load(entry)  # the loader keeps its own state (and locks)
        with self._lock:
            if entry._loaded:
                return entry._value  # type: ignore[no-any-return]
            value = self._load(entry)
            entry._value, entry._loaded = value, True
            return value

    def unknown(self, name: str) -> Exception:
        """The error for a name this registry does not hold."""
        return self.error(unknown_message(self.kind, name, self.names()))

    def describe(self, name: str) -> str:
        """The one-line description of ``name`` (without loading it)."""
        return self.entry(name).description

    # ------------------------------------------------------------------ Mapping

    def __getitem__(self, name: str) -> T:
        if name not in self:
            raise KeyError(name)
        return self.lookup(name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._entries:
            return True
        self._read_entry_points()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.entries())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()!r})"

    # ------------------------------------------------------------------ internals

    def _load(self, entry: Entry[T]) -> T:
        try:
            raw = entry._loader() if entry._loader is not None else load_target(entry.target)
            return self._convert(raw, entry.name) if self._convert is not None else raw  # type: ignore[no-any-return]
        except Exception as error:
            if isinstance(error, self._error_class()):
                raise
            where = f" ({entry.target})" if entry.target else ""
            raise self.error(
                f"{self.kind} {entry.name!r}{where} failed to load: {type(error).__name__}: {error}"
            ) from error

    def _error_class(self) -> type[BaseException]:
        return self.error if isinstance(self.error, type) else Exception

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        with self._lock:
            if self._entry_points_read:
                return
            self._entry_points_read = True
            group = self.entry_point_group
            assert group is not None
            from importlib import metadata

            try:
                found = sorted(metadata.entry_points(group=group), key=lambda e: (e.name, e.value))
            except Exception as error:  # a broken distribution must not hide the built-in names
                log.warning("reading %s entry points failed: %s", group, error)
                return
            for ep in found:
                held = self._entries.get(ep.name)
                if held is not None:
                    log.warning(
                        "entry point %s = %s (group %s) is ignored: %s %r is %s",
                        ep.name,
                        ep.value,
                        group,
                        self.kind,
                        ep.name,
                        held.source,
                    )
                    continue
                self._entries[ep.name] = Entry(ep.name, ep.value, "", "entry_point")


def subclass_of(base: type, kind: str) -> Callable[[Any, str], Any]:
    """A ``convert`` for registries of classes: the loaded object must be a subclass of ``base``
    (a :class:`ConfigError` naming the ``kind`` and the entry otherwise)."""

    # ``base`` is often abstract, which ``type[T]`` would refuse: the registry's own type says T.
    def check(obj: Any, name: str) -> Any:
        if not (isinstance(obj, type) and issubclass(obj, base)):
            raise ConfigError(f"{kind} {name!r}: {obj!r} is not a {base.__name__} subclass")
        return obj

    return check


def mapping_of_targets(registry: Registry[Any]) -> dict[str, str]:
    """``name → module:attr`` of a registry's lazy entries (the shape of the older public tables)."""
    return {e.name: e.target for e in registry.entries() if e.target}


__all__ = [
    "Entry",
    "Registry",
    "load_target",
    "mapping_of_targets",
    "suggest",
    "suggestions",
    "unknown_message",
]
