"""Evidence on the bundled datasets and a real session: the orderings that are certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextlab import load_dataset, replay
from contextlab.measure import targets_for
from contextlab.plugins import list_engines
from contextlab.transcripts import load_transcript


def shipped() -> list[str]:
    return [
        info.name for info in list_engines() if info.available is not False and info.source in ("builtin", "bundled")
    ]


def test_passthrough_keeps_every_fact_until_and_after_the_window_overflows() -> None:
    # 8K: the host spills what is over its per-output budget, and the window still overflows.
    result = replay(load_dataset("coding-agent-short"), "passthrough", context_length=8_000)
    trace = result.trace
    assert trace["overflow"].any()  # the overflow is reported, never hidden by dropping rows
    assert (trace["fact_retention"].dropna() == 1.0).all()
    assert (trace["identifier_retention"].dropna() == 1.0).all()


@pytest.mark.parametrize("engine", shipped())
def test_every_shipped_engine_is_measured_with_zero_violations(engine: str) -> None:
    result = replay(load_dataset("coding-agent-short"), engine, context_length=16_000)
    s = result.summary
    assert s["violations"] == 0
    trace = result.trace
    # Certain orderings: nothing beats having everything; recoverable includes closed-book.
    assert (trace["facts_in_context"] <= trace["facts_eligible"]).all()
    assert (trace["fact_retention_recoverable"].dropna() >= trace["fact_retention"].dropna()).all()
    assert s["prefix_breaks"] == int(trace["break_cause"].notna().sum())


def test_lcm_recovers_what_it_compacted() -> None:
    result = replay(load_dataset("coding-agent-short"), "lcm", context_length=12_000)
    s = result.summary
    assert s["compactions"] > 0 and s["recovery_tools"]
    assert s["fact_retention_recoverable_final"] == 1.0


def test_real_claude_code_session_gets_mined_facts(shared_transcripts: Path) -> None:
    transcript = load_transcript(shared_transcripts / "claude-code" / "short.jsonl")
    found = targets_for(transcript)
    assert targets_for(transcript) is found  # cached per transcript
    assert found.facts_source in ("mined", "none")
    result = replay(transcript, "passthrough")
    assert result.summary["facts_source"] == found.facts_source
    if found.facts_source == "mined":
        assert result.summary["fact_retention_final"] == 1.0
