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
# # Prototype a context engine in a cell
#
# **What it shows:** a new engine written in a cell, checked against the host contract with the
# conformance kit, then replayed next to the built-in engines on the same conversation.
#
# **How long:** about 30 s (the conformance kit replays several conversations twice, then four
# replays of a 289-request conversation).
#
# A context engine is a `ContextEngine` subclass with four required members: `name`,
# `update_from_response`, `should_compress` and `compress`. The same class runs unchanged in the
# real host: once `contextlab` is imported, `from agent.context_engine import ContextEngine` gives
# this same class, so an engine written here imports exactly as the host's plugins do.
#
# Below: a sliding window that, past the threshold, keeps the last `keep_messages` messages. It
# moves the cut forward past tool results so that a kept tool row never loses the assistant
# `tool_calls` message it answers (the host would otherwise see orphaned tool rows). Cutting only at
# user messages would be simpler, but the kit's `compacts_under_threshold` rule catches it: inside
# one long tool loop there is no user message to cut at.

# %%
# %matplotlib inline
from typing import Any

import contextlab
from contextlab import ContextEngine
from contextlab.plots import engine_table, plot_cumulative, plot_prompt_tokens_grid
from contextlab.testing import check_engine


class SlidingWindow(ContextEngine):
    def __init__(self, keep_messages: int = 12, threshold_percent: float = 0.75) -> None:
        self.keep_messages = keep_messages
        self.threshold_percent = threshold_percent

    @property
    def name(self) -> str:
        return "sliding_window"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens > 0

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        cut = max(0, len(messages) - self.keep_messages)
        while cut < len(messages) and messages[cut].get("role") == "tool":
            cut += 1  # safe cut point: never start with a tool result cut off from its call
        if cut == 0 or cut >= len(messages):
            return messages  # same object: "nothing done"
        self.compression_count += 1
        head = dict(messages[cut])
        head["content"] = f"[{cut} earlier messages dropped]\n{head.get('content') or ''}"
        return [head, *messages[cut + 1 :]]


# %% [markdown]
# ## The conformance kit
#
# `check_engine` drives the engine through the built-in conformance conversations as the host
# would, and checks every rule of the contract (valid output, never growing, no-op returns the input
# object, kept uids, no mutation, determinism, clones on several threads). `contextlab check NAME`
# runs the same from the command line, and the `engine_conformance` pytest fixture in tests.

# %%
report = check_engine(SlidingWindow)
print(report.format())

# %% [markdown]
# ## Compare with the built-in engines
#
# Classes defined in a notebook are passed directly; `compare` runs in this process, so nothing
# needs to be importable. The window is 128,000 tokens with the threshold at 0.8.

# %%
transcript = contextlab.load_dataset("support-agent")
trace, summaries = contextlab.compare(
    transcript,
    ["passthrough", "compressor", "mask_window", SlidingWindow],
    context_length=128_000,
    threshold_percent=0.8,
)
engine_table(summaries)

# %%
plot_prompt_tokens_grid(trace, ncols=2)

# %%
plot_cumulative(trace, title="cumulative prompt tokens: what each engine sends over the session")

# %% [markdown]
# Try a parameter: `replay` takes constructor parameters for a class.

# %%
wide = contextlab.replay(
    transcript, SlidingWindow, params={"keep_messages": 30}, context_length=128_000, threshold_percent=0.8
)
wide.summary["compactions"], wide.summary["prompt_tokens_total"]
