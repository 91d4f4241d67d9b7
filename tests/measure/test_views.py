"""The report views of the measurement layer."""

from __future__ import annotations

import pandas as pd

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


def _many_runs(runs: int) -> pd.DataFrame:
    rows = []
    for r in range(runs):
        for request in range(3):
            lost = 100 * r if request == 2 else None  # run r's one break invalidates 100 * r tokens
            cause = "compaction" if lost is not None else None
            rows.append(
                {"transcript": f"t{r}", "engine": "e", "params": "p", "request": request, "prompt_tokens": 10}
                | {"break_cause": cause, "break_tokens": lost, "break_cost_usd": 0.0 if lost is not None else None}
            )
    return pd.DataFrame(rows)


def test_the_break_timeline_of_a_big_sweep_draws_the_runs_that_lost_most() -> None:
    from contextlab.measure.views import TIMELINE_RUNS, measure_sections, plot_break_timeline, timeline_runs

    trace = _many_runs(500)
    drawn = timeline_runs(trace)
    assert [key[0] for key, _ in drawn] == [f"t{r}" for r in range(500 - TIMELINE_RUNS, 500)]
    assert len(plot_break_timeline(trace).axes) == TIMELINE_RUNS  # not one subplot per run
    page = "\n".join(measure_sections(trace))
    assert f"the {TIMELINE_RUNS} of 500 runs whose breaks invalidated the most tokens" in page
    small = _many_runs(3)
    assert len(timeline_runs(small)) == 3 and "runs whose breaks" not in "\n".join(measure_sections(small))


def test_the_diff_of_many_compactions_lists_those_that_dropped_most_needed_items() -> None:
    from contextlab.measure.views import compaction_diff_html

    labels = {"transcript": "t", "engine": "e", "params": "p"}
    diff = pd.DataFrame([{**labels, "request": r, "messages_removed": 1} for r in range(300)])
    items = pd.DataFrame(
        [
            {**labels, "request": r, "kind": "fact", "text": f"needed-{r}-{k}", "outcome": "removed"}
            | {"needed_later": True, "later_uses": 1, "next_use": r + 1}
            for r in range(300)
            for k in range(r % 7)  # request r dropped r % 7 needed items
        ]
    )
    page = compaction_diff_html({"compaction_diff": diff, "compaction_items": items}, compactions=10)
    assert "The 10 of 300 compactions that dropped the most items needed later" in page
    shown = [int(h.split("request ")[1].split("<")[0]) for h in page.split("<h4>")[1:]]
    assert len(shown) == 10 and shown == sorted(shown)
    assert all(r % 7 == 6 for r in shown)  # the ones with the most needed items, in run order
    assert "needed-6-5" in page and "needed-5-" not in page
