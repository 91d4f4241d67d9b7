"""The host's side of micro-compaction: when the pass runs, what it commits, and that it is off by default
(``docs/compressor.md``, section "Micro-compaction")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import contextlab
from contextlab.cli import main
from contextlab.engines.compressor import CompressorEngine, micro
from contextlab.errors import ConfigError
from contextlab.host.micro_turn import completed_with_reply, micro_pass
from contextlab.host.trace import TIMING_COLUMNS
from contextlab.host.turns import Step, Turn
from contextlab.hostconfig import load_host_config

SUPPORT = "datasets/support-agent.jsonl.gz"
SHORT = "datasets/coding-agent-short.jsonl.gz"


def _csv(frame: pd.DataFrame) -> str:
    """The frame as written, timing and the parameter label aside."""
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS or c == "params"]).to_csv(index=False)


def test_off_by_default_and_off_or_never_due_leave_traces_byte_identical() -> None:
    """With the pass off (the default), or on but never due, every trace byte is what it was without it."""
    runs = [
        contextlab.replay(SUPPORT, "compressor", context_length=64_000, params=params)
        for params in ({}, {"micro_compact": False}, {"micro_compact": True, "micro_compact_every_n_turns": 10**6})
    ]
    traces = {_csv(r.trace) for r in runs}
    compactions = {_csv(r.compactions) for r in runs}
    assert len(traces) == 1 and len(compactions) == 1
    assert "micro" not in set(runs[0].compactions["trigger"])


class _Observed(CompressorEngine):
    """Records the history ``on_turn_complete`` sees (upstream calls it after the micro pass)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seen: dict[int, list[dict[str, Any]]] = {}

    def on_turn_complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> None:
        self.seen[int(str(kwargs["turn_id"]).rsplit(":", 1)[1])] = messages


def test_a_pass_after_each_completed_turn_rewrites_the_history_before_the_turn_hook() -> None:
    engine = _Observed(micro_compact=True)
    result = contextlab.replay(SUPPORT, engine, context_length=64_000, probes=False)
    passes = result.compactions[result.compactions["trigger"] == "micro"]
    assert len(passes) >= 10 and (passes["outcome"] == "committed").all()
    # One exchange per pass (the first marker may outweigh a short exchange); supersedes shrink it all.
    assert (passes["messages_after"] <= passes["messages_before"]).all()
    assert (passes["messages_after"] < passes["messages_before"]).sum() >= len(passes) // 2
    assert (passes["tokens_before"] - passes["tokens_after"]).sum() > 0
    trace = result.trace.set_index("request")
    for _, row in passes.iterrows():
        # Committed after the turn: the next request carries the rewrite and the turn hook saw it.
        if row["request"] in trace.index:
            assert "micro" in str(trace.loc[row["request"], "compress_trigger"])
    observed = result.engine.seen  # type: ignore[attr-defined]
    turns = set(passes["turn"])
    assert all(any(m.get(micro.MICRO_KEY) for m in observed[t]) for t in turns)
    assert result.summary["status"] == "ok"


def test_the_pass_runs_only_after_a_turn_that_ended_on_a_reply() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
        {"role": "assistant", "content": "done"},
        {"role": "assistant", "content": "   "},
    ]
    assert completed_with_reply(Turn(0, (0,), 0, (Step(1, (2,)), Step(3))), messages)
    assert not completed_with_reply(Turn(0, (0,), 0, (Step(1, (2,)),)), messages)  # pending tool result
    assert not completed_with_reply(Turn(0, (0,), 0, (Step(4),)), messages)  # blank reply
    assert not completed_with_reply(Turn(0, (0,), 0, ()), messages)  # no request at all


def test_only_a_compressor_with_the_pass_switched_on_gets_it() -> None:
    on = CompressorEngine(micro_compact=True)
    assert micro_pass(on) == on.micro_compact_after_turn
    assert micro_pass(CompressorEngine()) is None

    class Truthy:
        micro_compact = 1  # upstream's gate is strict: `is True`

        def micro_compact_after_turn(self, messages: list[Any]) -> list[Any]:
            return messages

    class UpstreamNames:
        _micro_compact_enabled = True

        def _micro_compact(self, messages: list[Any]) -> list[Any]:
            return messages

    assert micro_pass(Truthy()) is None
    assert micro_pass(UpstreamNames()) is not None


def test_a_failing_pass_is_logged_and_the_replay_goes_on() -> None:
    class Broken(CompressorEngine):
        def micro_compact_after_turn(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
            raise RuntimeError("boom")

    result = contextlab.replay(SHORT, Broken(micro_compact=True), context_length=16_000, probes=False)
    assert result.status == "ok"
    assert any("micro-compaction raised RuntimeError: boom" in w for w in result.warnings)
    assert "micro" not in set(result.compactions["trigger"])


def test_config_yaml_and_param_reach_the_compressor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "compression:\n  micro_compact: true\n  micro_compact_every_n_turns: 2\n"
        "  micro_compact_defrag_threshold_tokens: 500\n"
    )
    host = load_host_config(config)
    assert host.params_for("compressor", {}) == {
        "micro_compact": True,
        "micro_compact_every_n_turns": 2,
        "micro_compact_defrag_threshold_tokens": 500,
    }
    assert host.params_for("hermes.compressor", {}) == {}  # the packaged host predates the pass
    assert host.params_for("mask_window", {}) == {}
    assert main(["replay", SHORT, "--config", str(config), "--context-length", "16000", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "micro_compact=True" in summary["params"] and "micro_compact_every_n_turns=2" in summary["params"]
    args = ["replay", SHORT, "--engine", "compressor", "--context-length", "16000", "--json"]
    assert main([*args, "--param", "micro_compact=true"]) == 0
    assert "micro_compact=True" in json.loads(capsys.readouterr().out)["params"]
    engine = CompressorEngine(micro_compact_every_n_turns=2, micro_compact_defrag_threshold_tokens=500)
    assert (engine.micro.every_n_turns, engine.micro.defrag_threshold_tokens) == (2, 500)


def test_a_mistyped_config_key_is_one_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("compression:\n  micro_compact: sometimes\n")
    with pytest.raises(ConfigError, match=r"config\.yaml: compression\.micro_compact must be a boolean"):
        load_host_config(config)
