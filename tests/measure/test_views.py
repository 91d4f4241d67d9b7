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


def test_faithfulness_findings_are_counted_and_listed() -> None:
    import pandas as pd

    from contextlab.measure.views import faithfulness_html

    labels = {"transcript": "t", "engine": "e", "params": "p"}
    findings = pd.DataFrame(
        [
            {**labels, "request": 4, "finding": "unsupported_identifier", "text": "<abc123>"},
            {**labels, "request": 9, "finding": "unsupported_identifier", "text": "def456"},
            {**labels, "request": 9, "finding": "status_upgrade", "text": "all tests pass"},
        ]
    )
    page = "\n".join(faithfulness_html({"faithfulness": findings}, shown=2))
    assert "first 2 of 3 findings" in page and "&lt;abc123&gt;" in page and "all tests pass" not in page
    assert "<td>2</td>" in page and "<td>1</td>" in page  # per-finding counts over every finding
    assert "No unsupported identifiers" in "\n".join(faithfulness_html({"faithfulness": findings.iloc[:0]}))
    assert faithfulness_html({}) == []
