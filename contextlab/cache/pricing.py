"""Prices per model from ``prices.yaml`` (each row with ``as_of`` and ``source``), overridable by a
user file, and the cost of one request (caching.md §8.5)."""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from contextlab.cache.profiles import CacheResult
from contextlab.errors import ConfigError

PRICES_ENV = "CONTEXTLAB_PRICES"
_REQUIRED = ("provider", "model", "input", "cache_read", "output", "as_of", "source")


@dataclass(frozen=True)
class Price:
    """One model's prices in USD per 1M tokens."""

    provider: str
    model: str
    input: float
    cache_read: float
    output: float
    as_of: str
    source: str
    cache_write: dict[str, float] = field(default_factory=dict)
    long_context: dict[str, Any] | None = None
    time_of_day: dict[str, Any] | None = None
    batch_mult: float | None = None
    note: str | None = None

    def write_rate(self, ttl: str) -> float:
        """Price of a written token for ``ttl``; a missing tier costs the base input price."""
        return self.cache_write.get(ttl, self.input)


class PriceTable:
    """Price rows by (provider, model); lookups match the longest model-name prefix."""

    def __init__(self, rows: list[Price]) -> None:
        self.rows = {(r.provider, r.model): r for r in rows}

    def find(self, provider: str, model: str) -> Price | None:
        """The row for ``model`` (vendor prefixes like ``google/`` and date suffixes tolerated)."""
        name = model.lower().rsplit("/", 1)[-1]
        best: Price | None = None
        for (row_provider, row_model), row in self.rows.items():
            if provider and row_provider != provider:
                continue
            if name.startswith(row_model) and (best is None or len(row_model) > len(best.model)):
                best = row
        return best

    def find_any(self, model: str) -> Price | None:
        """The row for ``model`` under any provider."""
        return self.find("", model)


def _row(raw: Any, where: str) -> Price:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with {', '.join(_REQUIRED)}")
    missing = [k for k in _REQUIRED if raw.get(k) in (None, "")]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)} (every price row needs as_of and source)")
    try:
        return Price(
            provider=str(raw["provider"]),
            model=str(raw["model"]),
            input=float(raw["input"]),
            cache_read=float(raw["cache_read"]),
            output=float(raw["output"]),
            as_of=str(raw["as_of"]),
            source=str(raw["source"]),
            cache_write={str(k): float(v) for k, v in (raw.get("cache_write") or {}).items()},
            long_context=raw.get("long_context"),
            time_of_day=raw.get("time_of_day"),
            batch_mult=raw.get("batch_mult"),
            note=raw.get("note"),
        )
    except (TypeError, ValueError, AttributeError) as error:
        raise ConfigError(f"{where}: {error}") from None


@functools.lru_cache(maxsize=16)
def _read(text: str, where: str) -> tuple[Price, ...]:
    # Parsed once per distinct text: observers are created per run in sweeps.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)  # a safe loader (C if available)
    except yaml.YAMLError as error:
        raise ConfigError(f"{where}: not valid YAML: {error}") from None
    rows = data.get("prices") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ConfigError(f"{where}: expected a list under 'prices'")
    return tuple(_row(raw, f"{where}: prices[{i}]") for i, raw in enumerate(rows))


def load_prices(user_file: str | Path | None = None) -> PriceTable:
    """The shipped table; rows from ``user_file`` (or ``$CONTEXTLAB_PRICES``) replace or add rows."""
    shipped = resources.files("contextlab.cache").joinpath("prices.yaml").read_text(encoding="utf-8")
    rows = list(_read(shipped, "contextlab/cache/prices.yaml"))
    path = user_file or os.environ.get(PRICES_ENV)
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"{p}: price file not found")
        rows += _read(p.read_text(encoding="utf-8"), str(p))
    return PriceTable(rows)


def _in_peak(price: Price, timestamp: float | None) -> bool:
    spec = price.time_of_day
    if not spec or timestamp is None or timestamp < 86400 * 365:
        return True  # without a real wall-clock time, charge the (higher) peak rate
    when = dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)
    if when.weekday() not in spec.get("days", range(7)):
        return False
    minute = when.hour * 60 + when.minute
    for window in spec.get("peak_utc", []):
        start, end = window.split("-")
        lo = int(start[:2]) * 60 + int(start[3:])
        hi = int(end[:2]) * 60 + int(end[3:])
        if lo <= minute < hi:
            return True
    return False


def request_cost(
    result: CacheResult,
    price: Price | None,
    output_tokens: int = 0,
    *,
    timestamp: float | None = None,
    read_mult: float | None = None,
    write_mult: float | None = None,
    batch: bool = False,
) -> float:
    """USD for one request: uncached·in + read·r + Σ write_ttl·w_ttl + out·o, per 1M tokens.

    Applies the long-context factor (whole request above the threshold), DeepSeek's off-peak factor
    when the timestamp is a real UTC time, and the batch factor. ``read_mult``/``write_mult`` price
    reads and writes as multiples of the input price instead of the row's rates (the ``prefix``
    profile). NaN without a price row.
    """
    if price is None:
        return math.nan
    read_rate = price.input * read_mult if read_mult is not None else price.cache_read
    cache_cost = result.read * read_rate
    for ttl, tokens in result.write_by_ttl.items():
        cache_cost += tokens * (price.input * write_mult if write_mult is not None else price.write_rate(ttl))
    unbilled = result.write - sum(result.write_by_ttl.values())
    input_cost = (result.uncached + unbilled) * price.input
    output_cost = output_tokens * price.output
    long = price.long_context
    if long and result.total > int(long.get("threshold", 0)):
        # The whole request is billed at the long-context rates once it passes the threshold.
        input_cost *= float(long.get("input_mult", 1))
        cache_cost *= float(long.get("cache_mult", 1))
        output_cost *= float(long.get("output_mult", 1))
    cost = (input_cost + cache_cost + output_cost) / 1e6
    if price.time_of_day and not _in_peak(price, timestamp):
        cost *= float(price.time_of_day.get("offpeak_mult", 1))
    if batch and price.batch_mult:
        cost *= float(price.batch_mult)
    return cost


def uncached_cost(result: CacheResult, price: Price | None, output_tokens: int = 0) -> float:
    """The same request with every input token at the base price (for ``cost_ratio``)."""
    if price is None:
        return math.nan
    return (result.total * price.input + output_tokens * price.output) / 1e6
