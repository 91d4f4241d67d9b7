# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Prompt-cache behaviour and cost
#
# Compaction lowers prompt tokens but rewrites the start of the conversation, and a provider's
# prompt cache only serves a prefix that did not change. This notebook sweeps two engines and two
# thresholds over the bundled conversations and plots, per request, the share of the prompt read
# from cache, then the running cost.
#
# `CacheObserver` simulates a provider's cache (here Anthropic's, with the host's `system_and_3`
# breakpoint layout) and adds `cache_read_tokens`, `cache_write_tokens`, `uncached_tokens` and
# `cost_usd` to the trace. Without it the plots fall back to `prefix_tokens` (the common prefix
# with the previous request: the most any prefix cache could serve) and cumulative prompt tokens;
# `hit_rate_column` / `cumulative_column` say which one is in use.

# %%
# %matplotlib inline
from matplotlib.figure import Figure

import contextlab
from contextlab import CacheObserver
from contextlab.bench import bench
from contextlab.examples import RecentTurnsEngine
from contextlab.plots import (
    cumulative_column,
    hit_rate_column,
    plot_cache_hit_rate,
    plot_cumulative,
    plot_engine_comparison,
)

transcripts = [contextlab.load_dataset("coding-agent-short"), contextlab.load_dataset("support-agent")]
cache = CacheObserver(["anthropic:claude-sonnet-5-5"], "system_and_3")
result = bench(
    transcripts,
    ["passthrough", "compressor", RecentTurnsEngine],
    grid={"threshold_percent": [0.5, 0.75], "context_length": [32_000]},
    observers=[cache],
    workers=1,
)
print("hit rate from:", hit_rate_column(result.trace), "| running total of:", cumulative_column(result.trace))
result.summaries[["transcript", "engine", "params", "compactions", "prompt_tokens_total", "cache_hit_rate", "cost_usd"]]

# %% [markdown]
# The support conversation, both engines at both thresholds: every compaction rewrites the
# cached prefix, so the hit rate dips and the cost line steepens for a few requests.

# %%
fig = Figure(figsize=(10, 7), layout="constrained")
top, bottom = fig.subplots(2, 1)
plot_cache_hit_rate(result.trace, transcript="support-agent", ax=top)
plot_cumulative(result.trace, transcript="support-agent", ax=bottom)
fig

# %% [markdown]
# Summed over both conversations: cost per engine and threshold.

# %%
plot_engine_comparison(result.summaries, "cost_usd")

# %% [markdown]
# Without a cache model the same plots use the prefix share instead:

# %%
plain = bench(transcripts[:1], ["passthrough", RecentTurnsEngine], {"threshold_percent": [0.5]}, workers=1)
assert hit_rate_column(plain.trace) == "prefix_tokens"
plot_cache_hit_rate(plain.trace)

# %%
assert (result.summaries["status"] == "ok").all()
assert hit_rate_column(result.trace) == "cache_read_tokens" and cumulative_column(result.trace) == "cost_usd"
runs = result.summaries.set_index(["transcript", "engine", "threshold_percent"])
support = runs.loc["support-agent"]
# passthrough only ever appends, so its cache keeps hitting; compaction trades hit rate for fewer tokens
assert support.loc[("passthrough", 0.5), "cache_hit_rate"] > support.loc[("recent_turns", 0.5), "cache_hit_rate"]
assert (
    support.loc[("recent_turns", 0.5), "prompt_tokens_total"] < support.loc[("passthrough", 0.5), "prompt_tokens_total"]
)
