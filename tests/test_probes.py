"""Retention probes: eligible facts, facts still in the request, and their summary."""

from __future__ import annotations

import math
from typing import Any

from contextlab import replay
from contextlab.examples import tool_conversation
from contextlab.probes import RetentionProbe, message_payload
from contextlab.transcripts import GoldFact
from tests.toy_engines import KeepLastEngine


def with_facts() -> Any:
    t = tool_conversation(6)
    # Plant one fact in a user message (turn 0), one in a tool result (turn 1), one in tool-call
    # arguments (turn 2), and one that only appears near the end.
    t.messages[0]["content"] += " The deploy key is KEY-7781."
    t.messages[6]["content"] += "\nERROR: cache shard 42 offline"
    t.messages[9]["tool_calls"][0]["function"]["arguments"] = '{"path": "src/\\"quoted\\".py"}'
    t.facts = [
        GoldFact("key", "KEY-7781", 0, "recall", needed_later=True),
        GoldFact("shard", "cache shard 42 offline", 6, "artifact"),
        GoldFact("quoted", 'src/"quoted".py', 9, "artifact"),
        GoldFact("late", "File 5 looks fine.", 23, "continuation"),
    ]
    return t


def test_passthrough_keeps_every_eligible_fact() -> None:
    t = with_facts()
    result = replay(t, "passthrough")
    trace = result.trace
    assert trace["facts_eligible"].tolist()[:4] == [1, 1, 1, 2]
    assert (trace["facts_in_context"] == trace["facts_eligible"]).all()
    assert result.summary["fact_retention_final"] == 1.0
    assert result.summary["needed_facts_retained_final"] == 1.0
    assert result.summary["facts"] == 4


def test_a_truncating_engine_loses_old_facts() -> None:
    result = replay(with_facts(), KeepLastEngine(threshold_tokens=900, keep=3))
    assert result.summary["compactions"] > 0
    assert result.summary["fact_retention_final"] < 1.0
    assert result.summary["needed_facts_retained_final"] == 0.0  # the deploy key was in the first ask
    assert result.trace["fact_retention"].iloc[-1] < 1.0
    assert "fact_retention_final.artifact" in result.summary


def test_no_facts_no_columns_and_probes_can_be_turned_off() -> None:
    plain = replay(tool_conversation(2), "passthrough")
    assert "facts_in_context" not in plain.trace.columns
    off = replay(with_facts(), "passthrough", probes=False)
    assert "facts_in_context" not in off.trace.columns


def test_payload_includes_unescaped_tool_arguments() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"q": "a\\nb"}'}}],
    }
    assert "a\nb" in message_payload(message)


def test_a_fact_inside_a_longer_fact_is_seen_with_it() -> None:
    t = with_facts()
    t.facts.append(GoldFact("sub", "shard 42", 6, "recall"))
    result = replay(t, "passthrough")
    assert result.summary["fact_retention_final"] == 1.0
    probe = RetentionProbe()
    probe.bind(t)
    assert math.isnan(RetentionProbe().summary().get("fact_retention_mean", float("nan")))


def test_the_facts_only_probe_reads_gold_facts_without_extracting_the_rest(monkeypatch: Any) -> None:
    from contextlab.measure import targets

    known = with_facts()
    assert len(targets.targets_for(known).targets) > len(known.facts)  # every kind extracted first
    extracted = replay(known, "passthrough", probes=False, observers=[RetentionProbe()])
    t = with_facts()
    targets.forget(t)

    def refuse(*_args: object) -> None:
        raise AssertionError("the facts-only probe extracted every target kind")

    monkeypatch.setattr(targets, "_extract", refuse)
    monkeypatch.setattr(targets.target_store, "load", lambda _key: None)
    alone = replay(t, "passthrough", probes=False, observers=[RetentionProbe()])
    columns = ["facts_eligible", "facts_in_context", "fact_retention"]
    assert alone.trace[columns].equals(extracted.trace[columns])
    assert {k: v for k, v in alone.summary.items() if k.startswith("fact")} == {
        k: v for k, v in extracted.summary.items() if k.startswith("fact")
    }
