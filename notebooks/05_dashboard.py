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
# # Dashboard: tune the threshold and focus topics
#
# **What it shows:** a live dashboard over one conversation: pick the transcript, the engines and a
# provider's cache model; move the `threshold_percent` slider or change the window and every
# panel re-plots (prompt tokens against each engine's effective threshold with compaction markers,
# cache hit rate, cumulative cost, fact retention). The line under the controls says which
# threshold each engine really used, and why when the host's floor overrode the slider.
#
# Type a focus topic (suggestions come from the conversation) to apply it as a manual
# `/compress <focus>` before the chosen turn, or press **compress now** to see what each engine
# keeps, drops and adds for that topic at that turn.
#
# **How long:** about 15 s to open; each change re-plots in about a second (two engines on a
# 289-request conversation; going back to a setting already seen is instant).
#
# The defaults are chosen so the knob visibly moves the default engine: at a 128K window the
# host's `compressor` follows `threshold_percent` above 0.75 (below that the host raises it to
# 0.75), and the teaching engine `recent_turns` follows it everywhere.

# %%
import contextlab
from contextlab.examples import RecentTurnsEngine
from contextlab.widgets import Dashboard

transcripts = {name: contextlab.load_dataset(name) for name in ("support-agent", "coding-agent-short")}
dashboard = Dashboard(
    transcripts,
    ["compressor", RecentTurnsEngine, "passthrough"],
    selected=["compressor", RecentTurnsEngine],
    context_lengths=(16_000, 32_000, 64_000, 128_000, 200_000),
    context_length=128_000,
    threshold_percent=0.8,
    provider="anthropic:claude-sonnet-5-5",
    focus_turn=40,
)
dashboard
