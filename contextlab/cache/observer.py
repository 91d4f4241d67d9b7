"""The cache model as a replay observer: one or several provider profiles, one rendering per request.

The first profile writes the plain columns ``cache_read_tokens``, ``cache_write_tokens``,
``uncached_tokens`` and ``cost_usd`` (the host also feeds the first two into the usage dict it gives
the engine); each further profile writes the same columns prefixed with its key, e.g.
``openai.cache_read_tokens``. The placement policy is applied last, to the final request.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from contextlab import schema
from contextlab.cache.blocks import BlockRenderer
from contextlab.cache.policies import Policy, make_policy
from contextlab.cache.prefix import PrefixProfile
from contextlab.cache.pricing import PriceTable, load_prices, request_cost, uncached_cost
from contextlab.cache.profiles import CacheProfile, make_profile
from contextlab.errors import ConfigError
from contextlab.host.observers import RequestObserver, RequestView

COLUMNS = tuple(schema.names(schema.CACHE_TRACE))
"""The first profile's columns (declared in :mod:`contextlab.schema`; further profiles prefix them)."""

ProfileSpec = str | CacheProfile


class CacheObserver:
    """Simulates prompt caching for one or more providers during a replay.

    Args:
        profiles: ``PROVIDER[:MODEL]`` strings or :class:`CacheProfile` instances (the first one
            owns the plain column names).
        policy: Placement policy name or instance (for providers that use breakpoints).
        prices: A price table (default: the shipped one plus ``$CONTEXTLAB_PRICES``).
        batch: Price requests with the batch discount.
    """

    def __init__(
        self,
        profiles: ProfileSpec | Sequence[ProfileSpec] = "anthropic",
        policy: str | Policy = "system_and_3",
        *,
        prices: PriceTable | None = None,
        batch: bool = False,
    ) -> None:
        specs = [profiles] if isinstance(profiles, (str, CacheProfile)) else list(profiles)
        if not specs:
            from contextlab.errors import ConfigError

            raise ConfigError("CacheObserver needs at least one provider profile")
        self.profiles = [make_profile(s) for s in specs]
        self.policy = make_policy(policy)
        self.prices = prices or load_prices()
        self.batch = batch
        self.keys = _keys(self.profiles)
        self._price_rows = [self._price(p) for p in self.profiles]
        for missing in self.unpriced():
            # Not an error here (token columns are still right); the CLI refuses it outright.
            warnings.warn(f"no price for {missing}: its cost_usd will be NaN", stacklevel=2)
        self._renderer = BlockRenderer()
        self._totals = [
            dict.fromkeys(("total", "read", "write", "uncached", "cost", "base_cost"), 0.0) for _ in self.profiles
        ]

    def unpriced(self) -> list[str]:
        """``provider:model`` of the profiles with no row in the price table (their cost is NaN)."""
        return [
            f"{p.provider}:{p.model}" for p, row in zip(self.profiles, self._price_rows, strict=True) if row is None
        ]

    def _price(self, profile: CacheProfile) -> Any:
        if isinstance(profile, PrefixProfile):
            return self.prices.find_any(profile.model)
        return self.prices.find(profile.provider, profile.model)

    def _name(self, index: int, column: str) -> str:
        return column if index == 0 else f"{self.keys[index]}.{column}"

    def columns(self) -> list[str]:
        """Column names, plain for the first profile and prefixed for the others."""
        return [self._name(i, c) for i in range(len(self.profiles)) for c in COLUMNS]

    def observe(self, view: RequestView) -> dict[str, Any]:
        """Cache columns for one request (every profile sees the same rendered blocks)."""
        messages = view.messages
        split = None
        if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
            split = self.policy.system_split(messages[0]["content"])
        request = self._renderer.render(
            messages,
            view.message_tokens,
            view.tools,
            view.tools_tokens,
            overhead_tokens=view.fixed_overhead_tokens,
            total_tokens=view.prompt_tokens,
            system_split=split,
            shared_messages=int(getattr(view, "prefix_messages", 0) or 0),
            history_rows=len(getattr(view, "history", ()) or ()),
        )
        markers = self.policy.markers(request, messages) if any(p.uses_markers for p in self.profiles) else []
        row: dict[str, Any] = {}
        output = int(getattr(view, "completion_tokens", 0) or 0)
        for i, profile in enumerate(self.profiles):
            result = profile.simulate(request, markers if profile.uses_markers else [], view.timestamp)
            price = self._price_rows[i]
            extra = {}
            if isinstance(profile, PrefixProfile):
                extra = {"read_mult": profile.read_mult, "write_mult": profile.write_mult}
            cost = request_cost(result, price, output, timestamp=view.timestamp, batch=self.batch, **extra)
            row[self._name(i, "cache_read_tokens")] = result.read
            row[self._name(i, "cache_write_tokens")] = result.write
            row[self._name(i, "uncached_tokens")] = result.uncached
            row[self._name(i, "cost_usd")] = cost
            totals = self._totals[i]
            totals["total"] += result.total
            totals["read"] += result.read
            totals["write"] += result.write
            totals["uncached"] += result.uncached
            totals["cost"] += cost
            totals["base_cost"] += uncached_cost(result, price, output)
        return row

    def summary(self) -> dict[str, Any]:
        """Token-weighted hit rate, write share, cost and cost ratio per profile."""
        out: dict[str, Any] = {}
        for i, totals in enumerate(self._totals):
            total = totals["total"]
            out[self._name(i, "cache_hit_rate")] = totals["read"] / total if total else 0.0
            out[self._name(i, "cache_write_share")] = totals["write"] / total if total else 0.0
            out[self._name(i, "cache_read_tokens_total")] = int(totals["read"])
            out[self._name(i, "cache_write_tokens_total")] = int(totals["write"])
            out[self._name(i, "uncached_tokens_total")] = int(totals["uncached"])
            out[self._name(i, "cost_usd")] = totals["cost"]
            base = totals["base_cost"]
            out[self._name(i, "cost_ratio")] = totals["cost"] / base if base else float("nan")
            out[self._name(i, "cache_profile")] = self.profiles[i].label
        out["cache_policy"] = self.policy.name
        return out

    def clone(self) -> RequestObserver:
        """A fresh observer: same profiles, policy and prices; empty stores."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the original already warned about missing prices
            return CacheObserver([p.clone() for p in self.profiles], self.policy, prices=self.prices, batch=self.batch)


def _keys(profiles: list[CacheProfile]) -> list[str]:
    providers = [p.provider for p in profiles]
    keys = []
    for p in profiles:
        key = p.provider if providers.count(p.provider) == 1 else p.label
        while key in keys:
            key += "'"
        keys.append(key)
    return keys


def priced_observers(specs: list[str], policy: str) -> list[RequestObserver]:
    """The ``--cache`` observers (none when no spec is given); a model without a price row is a
    one-line error naming the known models, not a column of NaN costs."""
    if not specs:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unpriced case is refused right below
        observer = CacheObserver(specs, policy)
    missing = observer.unpriced()
    if missing:
        known = ", ".join(sorted(f"{r.provider}:{r.model}" for r in observer.prices.rows.values()))
        raise ConfigError(
            f"--cache {missing[0]}: no price for this model (known: {known}); "
            "add a row in a YAML file named by $CONTEXTLAB_PRICES"
        )
    return [observer]
