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
# # Prototype a context engine in a cell
#
# A context engine is a `ContextEngine` subclass with four required members: `name`,
# `update_from_response`, `should_compress` and `compress`. The same class runs unchanged in the
# real host: once `contextlab` is imported, `from agent.context_engine import ContextEngine` gives
# this same class, so an engine written here imports exactly as the host's plugins do.
#
# Below: a sliding window that, past the threshold, keeps the last `keep_messages` messages. It
# moves the cut forward to the next user message so that an assistant `tool_calls` message is never
# separated from its tool results (the host would otherwise see orphaned tool rows).

# %%
# %matplotlib inline
from typing import Any

import contextlab
from contextlab import ContextEngine
from contextlab.plots import plot_cumulative, plot_prompt_tokens


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
        while cut < len(messages) and messages[cut].get("role") != "user":
            cut += 1  # safe cut point: a turn boundary
        if cut == 0 or cut >= len(messages):
            return messages  # same object: "nothing done"
        self.compression_count += 1
        head = dict(messages[cut])
        head["content"] = f"[{cut} earlier messages dropped]\n{head.get('content') or ''}"
        return [head, *messages[cut + 1 :]]


# %% [markdown]
# Replay it next to `passthrough` on one conversation. Classes defined in a notebook are passed
# directly; `compare` runs in this process, so nothing needs to be importable.

# %%
transcript = contextlab.load_dataset("support-agent")
trace, summaries = contextlab.compare(
    transcript, ["passthrough", SlidingWindow], context_length=64_000, threshold_percent=0.5
)
summaries[["engine", "compactions", "prompt_tokens_total", "prompt_tokens_max", "prefix_share", "violations"]]

# %%
plot_prompt_tokens(trace, title="sliding window vs passthrough")

# %%
plot_cumulative(trace)

# %% [markdown]
# Try a parameter: `replay` takes constructor parameters for a class.

# %%
wide = contextlab.replay(
    transcript, SlidingWindow, params={"keep_messages": 30}, context_length=64_000, threshold_percent=0.5
)
wide.summary["compactions"], wide.summary["prompt_tokens_total"]

# %%
by_engine = summaries.set_index("engine")
assert by_engine.loc["sliding_window", "status"] == "ok"
assert by_engine.loc["sliding_window", "compactions"] > 0
assert by_engine.loc["sliding_window", "violations"] == 0, "the safe cut must never orphan a tool result"
assert by_engine.loc["sliding_window", "prompt_tokens_total"] < by_engine.loc["passthrough", "prompt_tokens_total"]
assert wide.summary["prompt_tokens_total"] > by_engine.loc["sliding_window", "prompt_tokens_total"], (
    "a wider window keeps more"
)
