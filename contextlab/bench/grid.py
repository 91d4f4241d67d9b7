"""Sweep grids: scoped keys, per-engine expansion, and validation before anything runs.

A grid key is a host setting (``threshold_percent``, ``context_length``, ...), an engine constructor
parameter (``keep``), or either of those scoped to one engine (``compressor.threshold_percent``). An
unscoped engine parameter applies to every engine, so every engine must take it; otherwise the sweep
stops before it starts, naming the engine and the key (with a "did you mean" when one is close).
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextlab.bench.cells import Grid
from contextlab.engine import ContextEngine
from contextlab.engines import EngineSpec, engine_label
from contextlab.errors import ConfigError
from contextlab.plugins import known_engine_names, resolve_engine
from contextlab.registry import suggest, unknown_message


def expand_grid(grid: Mapping[str, Sequence[Any]] | None) -> list[Grid]:
    """The cartesian product of ``grid`` as ordered ``(key, value)`` tuples (keys in given order)."""
    if not grid:
        return [()]
    keys = list(grid)
    values: list[list[Any]] = []
    for key in keys:
        options = grid[key]
        if isinstance(options, str | bytes) or not isinstance(options, Iterable):
            raise ConfigError(f"grid[{key!r}]: expected a list of values, got {options!r}")
        listed = list(options)
        if not listed:
            raise ConfigError(f"grid[{key!r}]: the list of values is empty")
        values.append(listed)
    return [tuple(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def check_engine_names(engines: Sequence[EngineSpec]) -> None:
    """Stop on an engine name nothing provides (a typo should not cost a sweep)."""
    names: list[str] | None = None
    for spec in engines:
        if isinstance(spec, str):
            names = names if names is not None else known_engine_names()
            if spec not in names:
                raise ConfigError(unknown_message("engine", spec, names))


def accepted_params(spec: EngineSpec) -> frozenset[str] | None:
    """Constructor parameters an engine takes; None when it takes any (``**kwargs``) or cannot be known."""
    if isinstance(spec, ContextEngine):
        return frozenset()  # an instance is cloned, never constructed: it takes no parameters
    cls: type | None = spec if isinstance(spec, type) else None
    if cls is None:
        try:
            cls = type(resolve_engine(spec))
        except Exception:
            return None  # a broken engine fails its own runs, with the reason
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    taken = set()
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            taken.add(name)
    return frozenset(taken)


def plan(
    engines: Sequence[EngineSpec],
    grid: Mapping[str, Sequence[Any]] | None,
    params: Mapping[str, Any],
    host_fields: frozenset[str],
) -> list[list[Grid]]:
    """Per engine (in order), its grid combinations with scoped keys unscoped; raises on a bad key."""
    grid = dict(grid or {})
    expand_grid(grid)  # shapes first: a scalar or an empty list is the clearest error
    labels = [engine_label(spec) for spec in engines]
    aliases = [engine_names(spec) for spec in engines]
    every_name = sorted({name for names in aliases for name in names})
    accepted = [accepted_params(spec) for spec in engines]
    scoped: list[dict[str, Sequence[Any]]] = [{} for _ in engines]
    shared: dict[str, Sequence[Any]] = {}
    for key, values in grid.items():
        prefix, dot, rest = key.partition(".")
        if dot and prefix not in every_name:
            raise ConfigError(
                f"--grid {key}: no engine named {prefix!r} in this sweep{suggest(prefix, every_name)} "
                f"(engines: {', '.join(labels)})"
            )
        if dot:
            for index, names in enumerate(aliases):
                if prefix in names:
                    scoped[index][rest] = values
        else:
            shared[key] = values
    for key in params:
        _check_key(key, "param", labels, accepted, host_fields, range(len(labels)), scope_hint=False)
    for key in shared:
        _check_key(key, "grid", labels, accepted, host_fields, range(len(labels)), scope_hint=True)
    for index, keys in enumerate(scoped):
        for key in keys:
            _check_key(key, f"grid {labels[index]}.", labels, accepted, host_fields, [index], scope_hint=False)
    plans = []
    for index, names in enumerate(aliases):
        own = {**shared, **scoped[index]}
        ordered = {k: own[k] for k in _key_order(grid, names) if k in own}
        plans.append(expand_grid(ordered))
    return plans


def engine_names(spec: EngineSpec) -> set[str]:
    """Names a scoped grid key may use for an engine: its spec's name and the name it reports."""
    names = {engine_label(spec)}
    if isinstance(spec, type):
        names.add(spec.__name__)  # a class's own name scopes keys too, whatever it reports
    if not isinstance(spec, str):
        # An engine that cannot start fails its runs; its class name still scopes keys.
        with contextlib.suppress(Exception):
            names.add(str((spec() if isinstance(spec, type) else spec).name))
    return names


def _key_order(grid: Mapping[str, Any], names: set[str]) -> list[str]:
    """Keys in the order given, scoped ones under their plain name."""
    order: list[str] = []
    for key in grid:
        prefix, dot, rest = key.partition(".")
        name = rest if dot else key
        if (not dot or prefix in names) and name not in order:
            order.append(name)
    return order


def _check_key(
    key: str,
    where: str,
    labels: list[str],
    accepted: list[frozenset[str] | None],
    host_fields: frozenset[str],
    targets: Iterable[int],
    *,
    scope_hint: bool,
) -> None:
    if key in host_fields:
        return
    everything = set(host_fields).union(*(a for a in accepted if a is not None))
    shown = f"--{where} {key}" if where in ("grid", "param") else f"--{where}{key}"
    for index in targets:
        taken = accepted[index]
        if taken is None or key in taken:
            continue
        takers = [labels[i] for i, a in enumerate(accepted) if a is None or key in a]
        hint = suggest(key, everything) if not takers else ""
        scope = f"; scope it to the engines that take it, e.g. {takers[0]}.{key}" if scope_hint and takers else ""
        listing = ", ".join(sorted(taken)) or "none"
        raise ConfigError(
            f"{shown}: engine {labels[index]!r} takes no parameter {key!r}{hint} "
            f"(it takes: {listing}; or a host setting such as context_length){scope}"
        )
