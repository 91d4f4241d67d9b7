"""Provider prompt-cache simulation: blocks, a store on the virtual clock, provider profiles,
placement policies, prices, recorded-usage parsing and calibration (``reference/caching.md``)."""

from contextlab.cache.blocks import Block, BlockRenderer, RenderedRequest
from contextlab.cache.observer import CacheObserver
from contextlab.cache.policies import Policy, apply_policy, make_policy
from contextlab.cache.pricing import Price, PriceTable, load_prices, request_cost
from contextlab.cache.profiles import CacheProfile, CacheResult, Marker, make_profile
from contextlab.cache.store import CacheStore
from contextlab.cache.usage import NormalizedUsage, detect_shape, parse_usage

__all__ = [
    "Block",
    "BlockRenderer",
    "CacheObserver",
    "CacheProfile",
    "CacheResult",
    "CacheStore",
    "Marker",
    "NormalizedUsage",
    "Policy",
    "Price",
    "PriceTable",
    "RenderedRequest",
    "apply_policy",
    "detect_shape",
    "load_prices",
    "make_policy",
    "make_profile",
    "parse_usage",
    "request_cost",
]
