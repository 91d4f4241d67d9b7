"""Golden per-request traces of the compressor: any drift in a deterministic column fails.

Regenerate after an intended change with ``python tests/engines/golden_compressor.py``.
"""

from __future__ import annotations

import pytest
from golden_compressor import CASES, GoldenCase, render

from contextlab.host.trace import TIMING_COLUMNS


def first_difference(expected: str, actual: str) -> str:
    old, new = expected.splitlines(), actual.splitlines()
    header = old[0] if old else ""
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return f"line {i + 1} differs\n  header:   {header}\n  golden:   {a}\n  replayed: {b}"
    return f"line count differs: golden {len(old)}, replayed {len(new)}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_golden_trace(case: GoldenCase) -> None:
    trace, compactions = render(case)
    hint = "\n(intended? regenerate with `python tests/engines/golden_compressor.py` and review the diff)"
    expected_trace = case.trace_path.read_text(encoding="utf-8")
    assert trace == expected_trace, first_difference(expected_trace, trace) + hint
    expected_compactions = case.compactions_path.read_text(encoding="utf-8")
    assert compactions == expected_compactions, first_difference(expected_compactions, compactions) + hint


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_golden_files_are_meaningful(case: GoldenCase) -> None:
    import pandas as pd

    trace = pd.read_csv(case.trace_path)
    compactions = pd.read_csv(case.compactions_path)
    assert not set(trace.columns) & TIMING_COLUMNS and not set(compactions.columns) & TIMING_COLUMNS
    assert (trace["violations"] == 0).all()
    committed = compactions[compactions["outcome"] == "committed"]
    assert len(committed) >= 3
    assert (committed["tokens_after"] < committed["tokens_before"]).all()

    # The first compaction fires exactly where the unmanaged history's pressure first reaches the threshold.
    from golden_compressor import REPO

    import contextlab

    control = contextlab.replay(
        REPO / "datasets" / f"{case.dataset}.jsonl.gz", "passthrough", context_length=case.context_length
    ).trace
    threshold = int(trace["threshold_tokens"].iloc[0])
    crossing = int(control.loc[control["pressure_tokens"] >= threshold, "request"].iloc[0])
    assert int(committed["request"].iloc[0]) == crossing
    assert int(trace.loc[trace["compressed"], "request"].iloc[0]) == crossing
