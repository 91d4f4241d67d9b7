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
# # contextlab quickstart
#
# Load a recorded agent conversation, replay it through the simulated host with two context
# engines, and plot prompt tokens per request against the threshold.
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
# `passthrough` is the control engine: it never compacts. `compressor` is a faithful port of the
# host's default engine: past the threshold it summarises the middle of the conversation (offline,
# with a deterministic extractive summariser unless an LLM is configured). The window is 64,000
# tokens with the threshold at 50%; replayed whole, the conversation's last prompt is about
# 250,000 tokens, so without context management the prompt soon outgrows the window.

# %%
trace, summaries = contextlab.compare(
    transcript, ["passthrough", "compressor"], context_length=64_000, threshold_percent=0.5
)
summaries[
    ["engine", "requests", "compactions", "overflows", "prompt_tokens_total", "prompt_tokens_max", "prefix_share"]
]

# %%
fig = plot_prompt_tokens(trace)
fig

# %% [markdown]
# The trace is one row per provider request and is the table every plot reads:

# %%
trace[["engine", "turn", "request", "prompt_tokens", "threshold_tokens", "compressed", "prefix_tokens"]].head(8)

# %%
# Checks that keep this notebook honest when it runs in CI.
by_engine = summaries.set_index("engine")
assert by_engine.loc["passthrough", "compactions"] == 0
assert by_engine.loc["compressor", "compactions"] > 0
assert by_engine.loc["passthrough", "overflows"] > 0  # the window is too small for the whole conversation
assert by_engine.loc["compressor", "overflows"] == 0
assert by_engine.loc["compressor", "prompt_tokens_max"] < 64_000
assert (summaries["violations"] == 0).all()
