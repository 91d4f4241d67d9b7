"""The report views of the measurement layer."""

from __future__ import annotations

from contextlab import load_dataset, replay
from contextlab.measure import break_table
from contextlab.report import build_report


def test_report_has_break_attribution_and_ranked_compaction_diffs() -> None:
    result = replay(load_dataset("coding-agent-short"), "compressor", context_length=12_000)
    table = break_table(result.trace)
    assert int(table["breaks"].sum()) == result.summary["prefix_breaks"]
    page = build_report(result.trace, result.compactions, frames=result.frames)
    assert "Prefix breaks by cause" in page and "What each compaction dropped" in page
    assert page.count("request ") >= len(result.frames["compaction_diff"])
    without = build_report(result.trace, result.compactions)
    assert "Prefix breaks by cause" in without and "What each compaction dropped" not in without
