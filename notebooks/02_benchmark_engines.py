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
# # Benchmark every engine on real transcripts: a leaderboard
#
# **What it shows:** every available context engine replayed over a set of recorded agent sessions
# with Anthropic's prompt cache simulated, ranked in a leaderboard (cost first, among the engines
# that never overflow the window or send a malformed request), with one small panel per engine.
#
# **How long:** about 1 minute on two cores (eight engines x eight conversations).
#
# Data: the real recordings in `$CONTEXTLAB_TRANSCRIPTS` (else `shared/transcripts` beside this
# repository's checkout) when they are there: the four longest tau-bench airline conversations and
# the four largest mini-swe-agent trajectories. Without them it falls back to the bundled generated
# datasets, so it runs anywhere.

# %%
# %matplotlib inline
import os
from pathlib import Path
from statistics import median

import contextlab
from contextlab import CacheObserver, HostSettings
from contextlab.bench import bench
from contextlab.examples import shared_transcripts_dir
from contextlab.plots import engine_table, plot_engine_comparison, plot_prompt_tokens_grid
from contextlab.plugins import list_engines


def real_transcripts(folder: Path) -> list[contextlab.Transcript]:
    tau = contextlab.load_transcripts(folder / "tau-bench-airline" / "gpt-4o-airline.json")
    tau = sorted(tau, key=lambda t: -t.n_requests)[:4]
    trajectories = sorted((folder / "mini-swe-agent" / "trajs").glob("*.traj.json"), key=lambda p: -p.stat().st_size)
    return tau + [contextlab.load_transcript(p) for p in trajectories[:4]]


# This notebook's own guess (the library never guesses a folder): notebooks/ -> repo -> its parent.
folder = shared_transcripts_dir(os.environ.get("CONTEXTLAB_TRANSCRIPTS", "../../shared/transcripts"))
if folder is not None:
    transcripts, source = real_transcripts(folder), f"real recordings in {folder}"
else:
    transcripts = [contextlab.load_dataset(name) for name in ("coding-agent-short", "support-agent")]
    source = "the bundled generated datasets (no ../shared/transcripts here)"
engines = [info.name for info in list_engines() if info.available]
print(f"{len(transcripts)} conversations from {source}")
print("engines:", ", ".join(engines))

# %% [markdown]
# ## Pick a window that makes the engines work
#
# A window larger than the conversation tests nothing. The window here is 60% of the median peak
# prompt under `passthrough`, so most conversations cross their threshold half-way. (The
# `compressor` clamps its threshold to the host's floor below 64K windows; the `threshold` column
# of the leaderboard shows what each engine really used.)

# %%
sizing = bench(transcripts, ["passthrough"], progress=False)
window = max(8_000, round(0.6 * median(sizing.summaries["prompt_tokens_max"]), -3))
print(f"median peak prompt {median(sizing.summaries['prompt_tokens_max']):,.0f} tokens -> window {window:,}")

# %%
result = bench(
    transcripts,
    engines,
    settings=HostSettings(context_length=int(window)),
    observers=[CacheObserver(["anthropic:claude-sonnet-5-5"], "system_and_3")],
    workers=2,
)
print(f"{len(result.summaries)} runs, {len(result.failed)} failed")

# %% [markdown]
# ## Leaderboard
#
# Summed over the conversations: cost with the cache model, peak and total prompt tokens,
# compactions, cache hit rate. Engines that overflowed the window or sent a malformed request
# rank last whatever their cost.

# %%
board = engine_table(result.summaries, max_columns=11)
board["sound"] = (board.get("overflows", 0) == 0) & (board.get("violations", 0) == 0)
board["_cost"] = board["cost $"].str.replace(",", "").astype(float)
board = board.sort_values(["sound", "_cost"], ascending=[False, True]).drop(columns="_cost")
board.insert(0, "rank", range(1, len(board) + 1))
board

# %%
plot_engine_comparison(result.summaries, "cost_usd", baseline="passthrough", title="cost relative to passthrough")

# %% [markdown]
# One panel per engine on the longest conversation: where each engine compacts, against its own
# effective threshold.

# %%
longest = max(transcripts, key=lambda t: t.n_requests).transcript_id
plot_prompt_tokens_grid(result.trace, result.compactions, transcript=longest, ncols=4)
