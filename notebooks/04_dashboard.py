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
# chosen turn. The plot and the table below update after each change.

# %%
from contextlab.examples import RecentTurnsEngine, example_transcripts
from contextlab.widgets import Dashboard

dashboard = Dashboard(
    example_transcripts(limit=5),
    ["passthrough", RecentTurnsEngine],
    context_lengths=(8_000, 16_000, 128_000),
    threshold_percent=0.75,
    focus_turn=3,
)
dashboard

# %% tags=["hide-input"]
# Hidden check for CI: moving the controls re-runs the library and changes its result.
before = dashboard.result.summaries.set_index("engine")
dashboard.threshold.value = 0.4
after = dashboard.result.summaries.set_index("engine")
assert after.loc["recent_turns", "threshold_tokens"] == int(8_000 * 0.4)
assert after.loc["recent_turns", "compactions"] >= before.loc["recent_turns", "compactions"]
dashboard.focus.value = "baggage"
manual = dashboard.result.compactions.query("trigger == 'manual'")
assert set(manual["focus_topic"]) == {"baggage"} and len(manual) == 2
dashboard.focus.value = ""
dashboard.threshold.value = 0.5
