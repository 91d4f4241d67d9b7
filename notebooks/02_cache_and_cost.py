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
# prompt cache only serves the longest prefix that did not change. This notebook sweeps two
# engines over several conversations and plots, per request, the share of the prompt a cache
# could serve, then the running total.
#
# When a cache model adds `cache_read_tokens` / `cost_usd` columns to the trace, the plots use
# them (cache hit rate, cumulative cost); otherwise they fall back to `prefix_tokens` (the common
# prefix with the previous request: the most any prefix cache could hit) and cumulative prompt
# tokens. `hit_rate_column` / `cumulative_column` tell which one is in use.

# %%
# %matplotlib inline
from matplotlib.figure import Figure

from contextlab.bench import bench
from contextlab.examples import RecentTurnsEngine, example_transcripts
from contextlab.plots import (
    cumulative_column,
    hit_rate_column,
    plot_cache_hit_rate,
    plot_cumulative,
    plot_engine_comparison,
)

transcripts = example_transcripts(limit=6)
result = bench(
    transcripts,
    ["passthrough", RecentTurnsEngine],
    grid={"threshold_percent": [0.5, 0.75], "context_length": [8_000]},
    workers=1,
)
print("hit rate from:", hit_rate_column(result.trace), "| running total of:", cumulative_column(result.trace))
result.summaries[["transcript", "engine", "params", "compactions", "prompt_tokens_total", "prefix_share"]].head(8)

# %% [markdown]
# One conversation, both engines at both thresholds: every compaction shows up as a dip in the
# cacheable share.

# %%
first = transcripts[0].transcript_id
fig = Figure(figsize=(10, 7), layout="constrained")
top, bottom = fig.subplots(2, 1)
plot_cache_hit_rate(result.trace, transcript=first, ax=top)
plot_cumulative(result.trace, transcript=first, ax=bottom)
fig

# %% [markdown]
# Across all six conversations: total prompt tokens per engine and threshold.

# %%
plot_engine_comparison(result.summaries, "prompt_tokens_total")

# %%
summary = result.summaries.groupby(["engine", "params"], sort=False)[
    ["prompt_tokens_total", "prefix_tokens_total"]
].sum()
summary["prefix_share"] = summary["prefix_tokens_total"] / summary["prompt_tokens_total"]
summary

# %%
assert (result.summaries["status"] == "ok").all()
control = summary.loc["passthrough"]["prefix_share"].iloc[0]
assert (summary.loc["recent_turns"]["prefix_share"] < control).all(), "compaction should cost cacheable prefix"
