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
# Data: the tau-bench airline recordings found through `$CONTEXTLAB_TRANSCRIPTS` (or
# `../shared/transcripts` beside the repository). `example_transcripts()` says where it looked
# if they are missing; any transcript file works with `contextlab.load_transcript(path)`.

# %%
# %matplotlib inline
import contextlab
from contextlab.examples import RecentTurnsEngine, example_transcripts
from contextlab.plots import plot_prompt_tokens

transcript = example_transcripts(limit=1)[0]
transcript

# %% [markdown]
# `passthrough` is the control engine: it never compacts. `RecentTurnsEngine` (a small teaching
# engine shipped in `contextlab.examples`) keeps the last two user turns once the prompt passes
# the threshold. A small window (8,000 tokens, threshold at 50%) makes compaction visible on a
# short conversation.

# %%
trace, summaries = contextlab.compare(
    transcript, ["passthrough", RecentTurnsEngine], context_length=8_000, threshold_percent=0.5
)
summaries[["engine", "requests", "compactions", "prompt_tokens_total", "prompt_tokens_max", "prefix_share"]]

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
assert by_engine.loc["recent_turns", "compactions"] > 0
assert by_engine.loc["recent_turns", "prompt_tokens_max"] < by_engine.loc["passthrough", "prompt_tokens_max"]
assert (summaries["violations"] == 0).all()
