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
# # Dashboard: tune threshold and focus topics
#
# Pick a conversation and engines, move the threshold slider (it replays when released), choose a
# context length, and type a focus topic: it is applied as a manual `/compress <focus>` before the
# chosen turn. The plot and the table below update after each change. The conversations are the
# project's bundled datasets; pass any transcripts you loaded yourself instead.

# %%
import contextlab
from contextlab.examples import RecentTurnsEngine
from contextlab.widgets import Dashboard

transcripts = {name: contextlab.load_dataset(name) for name in ("coding-agent-short", "support-agent", "coding-agent")}
dashboard = Dashboard(
    transcripts,
    ["passthrough", "compressor", RecentTurnsEngine],
    context_lengths=(16_000, 32_000, 64_000, 200_000),
    context_length=32_000,
    threshold_percent=0.75,
    focus_turn=2,
)
dashboard

# %% tags=["hide-input"]
# Hidden check for CI: moving the controls re-runs the library and changes its result.
before = dashboard.result.summaries.set_index("engine")
dashboard.threshold.value = 0.4
after = dashboard.result.summaries.set_index("engine")
assert after.loc["recent_turns", "threshold_tokens"] == int(32_000 * 0.4)
assert after.loc["recent_turns", "compactions"] > before.loc["recent_turns", "compactions"]
dashboard.focus.value = "failing test"
manual = dashboard.result.compactions.query("trigger == 'manual'")
assert set(manual["focus_topic"]) == {"failing test"} and len(manual) == 3
assert manual.set_index("engine").loc["compressor", "outcome"] == "committed"
dashboard.focus.value = ""
dashboard.threshold.value = 0.5
