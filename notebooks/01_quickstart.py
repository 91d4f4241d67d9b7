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
# # contextlab quickstart
#
# **What it shows:** one recorded agent conversation replayed through the simulated Hermes host with
# two context engines (`passthrough`, which never compacts, and `compressor`, the host's default),
# prompt tokens per request against each engine's *effective* threshold, and the per-request trace
# every other table and plot is built from.
#
# **How long:** about 15 s (two replays of a 289-request conversation; measured on a shared 2-core machine).
#
# Data: `support-agent`, one of the conversations the project generates itself (seeded) and ships
# in `datasets/`, so this runs anywhere. Any recorded conversation works the same way with
# `contextlab.load_transcript(path)` (OpenAI JSON/JSONL, Claude Code, tau-bench, ...).

# %%
# %matplotlib inline
import contextlab
from contextlab.plots import plot_prompt_tokens

transcript = contextlab.load_dataset("support-agent")
transcript

# %% [markdown]
# The window is 128,000 tokens and `threshold_percent` is 0.9. Replayed whole, the conversation's
# last prompt is about 250,000 tokens, so without context management the prompt outgrows the
# window. A note on the knob: below a 512K window the host raises any `threshold_percent` to
# 0.75 and never goes under 64K tokens, so at 32K or 64K windows every setting gives the same
# threshold; contextlab warns once when that happens and shows the effective value everywhere.

# %%
trace, summaries = contextlab.compare(
    transcript, ["passthrough", "compressor"], context_length=128_000, threshold_percent=0.9
)
summaries[["engine", "threshold_tokens", "requests", "compactions", "overflows", "prompt_tokens_max", "prefix_share"]]

# %%
plot_prompt_tokens(trace)

# %% [markdown]
# The trace is one row per provider request, and is the table every plot reads:

# %%
trace[["engine", "turn", "request", "prompt_tokens", "threshold_tokens", "compressed", "prefix_tokens"]].head(8)
