"""The host's post-tool prune path with the compressor's ``prune_tool_results_only``."""

from __future__ import annotations

from pathlib import Path

import contextlab

DATA = Path(__file__).resolve().parents[2] / "datasets" / "support-agent.jsonl.gz"


def test_noop_prunes_leave_no_rows_and_commits_are_measured() -> None:
    quiet = contextlab.replay(DATA, "compressor", context_length=200_000)
    assert "prune" not in set(quiet.compactions["trigger"])  # every prune was a no-op (gate off)
    pruning = contextlab.replay(
        DATA,
        "compressor",
        context_length=200_000,
        params={"proactive_prune_tokens": 30_000, "proactive_prune_min_result_chars": 1_000},
    )
    prunes = pruning.compactions[pruning.compactions["trigger"] == "prune"]
    assert len(prunes) >= 1 and (prunes["outcome"] == "committed").all()
    assert (prunes["tokens_before"] - prunes["tokens_after"] >= 4_096).all()  # the reclaim minimum
    assert pruning.trace["pruned"].sum() == len(prunes)
