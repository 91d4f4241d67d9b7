# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Prompt-cache hit rates and cost across providers and breakpoint policies
#
# **What it shows:** how often each provider's prompt cache would hit, and what the session would
# cost, for two engines and every cache-breakpoint placement policy; then, per request, where the
# hit rate dips and why (a compaction, a pruning pass, a cache entry that expired).
#
# **How long:** about 45 s (fourteen replays of a 289-request conversation with four cache models).
#
# Compaction lowers prompt tokens but rewrites the start of the conversation, and a provider's
# prompt cache only serves a prefix that did not change. `CacheObserver` simulates each provider's
# cache rules (Anthropic's breakpoints and TTLs, OpenAI's automatic prefix, Gemini's implicit
# cache, DeepSeek's disk cache) and prices every request; the first profile fills the plain
# `cache_read_tokens` / `cost_usd` columns and the others the same columns prefixed with their
# provider.

# %%
# %matplotlib inline
import pandas as pd
from matplotlib.figure import Figure

import contextlab
from contextlab import CacheObserver, HostSettings
from contextlab.bench import bench
from contextlab.cache.policies import POLICIES
from contextlab.plots import plot_cache_hit_rate, plot_cumulative

PROVIDERS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.5", "gemini:gemini-3-pro", "deepseek:deepseek-flash"]
transcript = contextlab.load_dataset("support-agent")
settings = HostSettings(context_length=128_000, threshold_percent=0.8)
runs = []
for policy in sorted(POLICIES):
    result = bench(
        [transcript], ["passthrough", "compressor"], settings=settings, observers=[CacheObserver(PROVIDERS, policy)]
    )
    runs.append(result.summaries.assign(policy=policy))
summaries = pd.concat(runs, ignore_index=True)
print(
    f"{len(summaries)} runs: {summaries['policy'].nunique()} policies x 2 engines, {len(PROVIDERS)} cache models each"
)

# %% [markdown]
# ## Hit rate and cost per provider, engine and policy
#
# Anthropic caches only up to the breakpoints a policy places (`none` places none, so nothing is
# read from cache); the other providers cache automatically, so the policy matters little to them.

# %%
providers = {p: ("" if i == 0 else p.split(":")[0] + ".") for i, p in enumerate(PROVIDERS)}
rows = []
for _, run in summaries.iterrows():
    for provider, prefix in providers.items():
        rows.append(
            {
                "policy": run["policy"],
                "engine": run["engine"],
                "provider": provider,
                "hit rate": run[f"{prefix}cache_hit_rate"],
                "cost $": run[f"{prefix}cost_usd"],
            }
        )
table = pd.DataFrame(rows)
table.pivot_table(index=["policy", "engine"], columns="provider", values="hit rate").style.format("{:.1%}")

# %%
table.pivot_table(index=["policy", "engine"], columns="provider", values="cost $").style.format("${:,.2f}")

# %% [markdown]
# ## Where the cache misses, request by request
#
# The host's own layout (`system_and_3`) with Anthropic's cache: each dip is marked with its cause,
# read from the trace row (a compaction rewrote the prefix, a prune cleared old tool output, or
# the gap since the previous request outlived the 5-minute TTL).

# %%
layout = bench(
    [transcript],
    ["passthrough", "compressor"],
    settings=settings,
    observers=[CacheObserver(["anthropic:claude-sonnet-5-5"], "system_and_3")],
)
fig = Figure(figsize=(11, 7), layout="constrained")
top, bottom = fig.subplots(2, 1, sharex=True)
plot_cache_hit_rate(layout.trace, ax=top, title="support-agent: Anthropic cache hit rate per request")
plot_cumulative(layout.trace, ax=bottom, title="support-agent: cumulative cost (USD)")
fig
