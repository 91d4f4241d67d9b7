"""The run summary's arithmetic on numpy columns: a replay's own typed frames and a saved frame's
loosely typed columns (floats with blanks, objects) give the same counts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from contextlab.host.trace import COMPACTION_COLUMNS, build_frame, host_loop_counts, prefix_broken, run_summary

BASE = {"transcript": "t", "engine": "e", "params": ""}


def _trace() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "turn": [0, 0, 1, 1, 2],
            "n_messages": [3, 5, 5, 9, 4],
            "prefix_messages": [0, 3, 5, 5, 2],
            "prompt_tokens": [100, 150, 150, 300, 120],
            "prompt_tokens_rough": [90, 140, 140, 280, 110],
            "completion_tokens": [10, 10, 0, 20, 5],
            "prefix_tokens": [0, 100, 0, 150, 40],
            "violations": [0, 0, 0, 1, 0],
            "overflow": [False, False, False, True, False],
            "select_context_used": [False, True, False, True, False],
            "engine_ms": [0.5, 0.25, 0.0, 1.0, 0.25],
            "sent": [True, True, False, True, True],
            "usage_reported": [True, False, False, True, False],
            "retries": [0, 1, 0, 0, 2],
            "invalid_results": [0, 0, 0, 1, 0],
            "engine_tool_results": [0, 0, 0, 0, 1],
            "session_event": [None, None, None, "resume", None],
            "history_repairs": [0, 2, 0, 1, 0],
            "tool_outputs_spilled": [1, 0, 0, 2, 0],
            "tool_loop_notes": [0, 1, 0, 0, 1],
        }
    )


def _compactions() -> pd.DataFrame:
    rows = [
        {"request": 1, "trigger": "pre_api", "outcome": "committed"},
        {"request": 3, "trigger": "prune", "outcome": "committed"},
        {"request": 3, "trigger": "overflow", "outcome": "rejected"},
        {"request": 4, "trigger": "pre_api", "outcome": "timeout"},
        {"request": 5, "trigger": "pre_api", "outcome": "invalid"},  # after the last request
    ]
    return pd.DataFrame(rows, columns=COMPACTION_COLUMNS)


def _as_saved(trace: pd.DataFrame) -> pd.DataFrame:
    """What a CSV round trip of an older writer can give: counts as floats with a blank, objects."""
    saved = trace.copy()
    saved["retries"] = [0.0, 1.0, np.nan, 0.0, 2.0]
    saved["invalid_results"] = saved["invalid_results"].astype(object)
    saved["usage_reported"] = saved["usage_reported"].astype(object)
    saved["turn"] = saved["turn"].astype(float)
    return saved


def test_unsent_rows_are_never_breaks_and_breaks_compare_sent_neighbours() -> None:
    expected = [False, False, False, False, True]  # row 4 shares 2 of the 9 messages row 3 sent
    assert prefix_broken(_trace()).tolist() == expected
    assert prefix_broken(_as_saved(_trace())).tolist() == expected


def test_host_loop_counts_agree_on_typed_and_saved_columns() -> None:
    expected = {
        "invalid_results": 2,  # one in the trace, one pass recorded after the last request
        "compression_timeouts": 1,
        "requests_not_sent": 1,
        "retries": 3,
        "responses_without_usage": 2,  # rows 1 and 4 (row 2 was never sent)
        "engine_tool_results": 1,
        "session_boundaries": 1,
        "history_repairs": 3,
        "tool_outputs_spilled": 3,
        "tool_loop_notes": 2,
    }
    assert host_loop_counts(_trace(), _compactions()) == expected
    assert host_loop_counts(_as_saved(_trace()), _compactions()) == expected


def test_summary_counts_from_typed_and_saved_frames_agree() -> None:
    for trace in (_trace(), _as_saved(_trace())):
        summary = run_summary(trace, _compactions(), BASE, {})
        assert (summary.requests, summary.turns) == (5, 3)
        assert (summary.compactions, summary.compaction_attempts, summary.prunes) == (1, 4, 1)
        assert (summary.prompt_tokens_total, summary.prompt_tokens_max) == (820, 300)
        assert summary.prompt_tokens_mean == 164.0
        assert summary.prefix_breaks == 1 and summary.prefix_tokens_total == 290
        assert (summary.violations, summary.overflows, summary.select_context_used) == (1, 1, 2)
        assert summary.engine_ms_total == 2.0


def test_an_empty_run_sums_to_zero() -> None:
    empty = _trace().iloc[0:0]
    summary = run_summary(empty, _compactions().iloc[0:0], BASE, {})
    assert (summary.requests, summary.turns, summary.compactions, summary.prefix_breaks) == (0, 0, 0, 0)
    assert summary.prompt_tokens_total == 0 and summary.prompt_tokens_mean == 0.0


def test_frames_built_by_column_are_the_frames_pandas_builds_by_row() -> None:
    rows = [
        {
            "n": i,
            "big": 2**70 if i == 2 else i,  # beyond int64: pandas decides
            "share": 0.5 * i if i != 1 else math.nan,
            "flag": i % 2 == 0,
            "mixed": i if i % 2 else 1.5,
            "label": None if i == 0 else f"row {i}",
            "blank": None,
            "extra": [i],
        }
        for i in range(4)
    ]
    built = build_frame(rows, ["n", "share"])
    expected = pd.DataFrame(rows, columns=["n", "share", "big", "flag", "mixed", "label", "blank", "extra"])
    pd.testing.assert_frame_equal(built, expected, check_exact=True)
    assert list(built.dtypes) == list(expected.dtypes)
    reordered = [rows[0], {key: rows[1][key] for key in reversed(rows[1])}]  # keys in another order
    columns = ["n", "big", "share", "flag", "mixed", "label", "blank", "extra"]  # extras as first seen
    pd.testing.assert_frame_equal(build_frame(reordered, ["n"]), pd.DataFrame(reordered, columns=columns))


def test_the_summary_from_the_arrays_a_frame_was_built_from_is_the_summary_from_the_frame() -> None:
    from pathlib import Path

    from contextlab import replay
    from contextlab.host.trace import TRACE_COLUMNS, frame_and_arrays, summarize

    datasets = Path(__file__).resolve().parents[2] / "datasets"
    result = replay(datasets / "coding-agent-short.jsonl.gz", "compressor", context_length=16_000)
    assert len(result.compactions)
    trace, arrays = frame_and_arrays(result.trace.to_dict("records"), TRACE_COLUMNS)
    assert arrays is not None and isinstance(arrays["prompt_tokens"], np.ndarray)
    base = {key: result.summary[key] for key in ("transcript", "engine", "params")}
    with_arrays = summarize(trace, result.compactions, base, {}, arrays)
    assert with_arrays == summarize(trace, result.compactions, base, {})
    assert with_arrays["prompt_tokens_total"] == result.summary["prompt_tokens_total"]
    assert with_arrays["prefix_breaks"] == result.summary["prefix_breaks"]
