"""Cache-break attribution: why each prefix break happened, where it hit, and what it cost.

The probe records, per request, the *segment* the break hit (``system``, ``tools``, ``summary``,
``user``, ``assistant``, ``tool_result``), its message position and the tokens of the previous
request it invalidated. After the run the trace's own flags give the *cause*, first match wins:
system prompt change, tool schema change (``engine_tool`` when the changed names are the engine's),
compaction (a committed non-prune pass before this request), prune, ``history_repair`` (the host
merged or dropped rows of its history, or rewrote tool-call arguments, before this request),
``select_context``, else ``host`` (a sanitizer rewrite). The cost is priced under the run's first
cache profile: every invalidated token was a cache read at the previous request and is now paid
at the write (or input) rate.
"""

from __future__ import annotations

import math

import pandas as pd

CAUSES = ("system_prompt", "tool_schema", "compaction", "prune", "history_repair", "select_context", "host")


def attribute_breaks(trace: pd.DataFrame, price: tuple[float, float, float] | None) -> list[str | None]:
    """Add ``break_cause`` and ``break_cost_usd`` to ``trace`` in place (NaN cost when unpriced);
    returns the causes, request by request (None: no break)."""
    # Plain lists (one C-level conversion per column): iterating Series boxes every value.
    # A trace written before the host repaired its history has no repairs column: none happened.
    repairs = trace["history_repairs"].fillna(0).tolist() if "history_repairs" in trace else [0] * len(trace)
    causes: list[str | None] = [
        _cause(segment, bool(compressed), trigger, bool(pruned), bool(repaired), bool(selected))
        for segment, compressed, trigger, pruned, repaired, selected in zip(
            trace["break_segment"].tolist(),
            trace["compressed"].tolist(),
            trace["compress_trigger"].tolist(),
            trace["pruned"].tolist(),
            repairs,
            trace["select_context_used"].tolist(),
            strict=True,
        )
    ]
    trace["break_cause"] = causes
    if price is None:
        trace["break_cost_usd"] = math.nan
        return causes
    _input, read, paid = price
    per_token = max(0.0, paid - read) / 1_000_000
    trace["break_cost_usd"] = trace["break_tokens"].fillna(0).astype(float) * per_token
    return causes


def _cause(
    segment: object, compressed: bool, trigger: object, pruned: bool, repaired: bool, selected: bool
) -> str | None:
    if not isinstance(segment, str):
        return None
    if segment == "system":
        return "system_prompt"
    if segment == "tools":
        return "tool_schema"
    triggers = str(trigger or "").split("+")
    if compressed and any(t and t != "prune" for t in triggers):
        return "compaction"
    if pruned:
        return "prune"
    if repaired:
        return "history_repair"
    if selected:
        return "select_context"
    return "host"


def break_table(trace: pd.DataFrame) -> pd.DataFrame:
    """Per run and cause: breaks, invalidated tokens and cost (the report's attribution table)."""
    if "break_cause" not in trace.columns:
        return pd.DataFrame(columns=["transcript", "engine", "params", "cause", "breaks", "tokens", "cost_usd"])
    rows = trace[trace["break_cause"].notna()]
    grouped = rows.groupby(["transcript", "engine", "params", "break_cause"], sort=True)
    table = grouped.agg(
        breaks=("break_cause", "size"), tokens=("break_tokens", "sum"), cost_usd=("break_cost_usd", "sum")
    )
    return table.reset_index().rename(columns={"break_cause": "cause"})


def price_of(observer: object) -> tuple[float, float, float] | None:
    """``(input, cache_read, paid)`` USD per 1M tokens for a cache observer's first profile.

    ``paid`` is the write rate for providers that bill writes (explicit breakpoints), else input.
    """
    from contextlab.cache.observer import CacheObserver
    from contextlab.cache.prefix import PrefixProfile

    if not isinstance(observer, CacheObserver) or not observer.profiles:
        return None
    profile = observer.profiles[0]
    if isinstance(profile, PrefixProfile):
        row = observer.prices.find_any(profile.model)
    else:
        row = observer.prices.find(profile.provider, profile.model)
    if row is None:
        return None
    paid = row.write_rate("5m") if profile.uses_markers else row.input
    return row.input, row.cache_read, paid
