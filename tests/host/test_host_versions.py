"""``HostSettings.hermes_version``: the replay follows newer upstream or PyPI ``hermes-agent`` 0.19.0
(``contextlab.host.versions``, docs/host-loop.md §Host versions). Each 0.19.0 rule against the newest
one on a toy engine; ``tests/hermes/test_real_loop.py`` holds whole sessions against the real loop."""

from __future__ import annotations

from typing import Any

import pytest

from contextlab import HostSettings, replay
from contextlab.api import follow_host_version
from contextlab.engine import Message
from contextlab.engines.compressor.engine import CompressorEngine
from contextlab.errors import ConfigError
from contextlab.examples import tool_conversation
from contextlab.host.legacy_rough import STORE_MARKER_CHARS, LegacyRoughColumns
from contextlab.host.tool_results import ToolResultBudget
from contextlab.tokens import legacy_message_chars, legacy_messages_tokens
from contextlab.transcripts import Transcript
from tests.request_log import Requests
from tests.toy_engines import BaseToy, KeepLastEngine


class GateToy(KeepLastEngine):
    """Records the figure and ``last_prompt_tokens`` at every ``should_compress``, and its inputs."""

    def __init__(self, threshold_tokens: int = 10**9, keep: int = 4) -> None:
        super().__init__(threshold_tokens, keep)
        self.asked: list[tuple[int, int]] = []
        self.inputs: list[list[Message]] = []

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        self.asked.append((int(prompt_tokens or 0), int(self.last_prompt_tokens)))
        return super().should_compress(prompt_tokens)

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        self.inputs.append(messages)
        return super().compress(messages, *args, **kwargs)


def run(engine: Any, transcript: Transcript | None = None, **settings: Any) -> Any:
    return replay(transcript or tool_conversation(4), engine, HostSettings(**settings), probes=False)


def tool_turn(steps: int, tool_chars: int = 300) -> Transcript:
    """One user turn of ``steps`` tool calls, then a reply."""
    rows: list[Message] = [{"role": "user", "content": "Check every file."}]
    for step in range(steps):
        call = {"id": f"call_{step}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        rows.append({"role": "assistant", "content": f"Reading {step}.", "tool_calls": [call]})
        rows.append({"role": "tool", "tool_call_id": f"call_{step}", "content": "x" * tool_chars})
    rows.append({"role": "assistant", "content": "All read."})
    return Transcript("turn", rows, "You are terse.", [])


def test_an_unknown_version_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"hermes_version must be one of newest, 0\.19\.0, got '0\.18'"):
        HostSettings(hermes_version="0.18")
    assert HostSettings(hermes_version="0.19.0").label() == "ctx=200000,hermes=0.19.0"
    assert "hermes" not in HostSettings().label()


def test_0_19_0_gates_read_the_rough_estimate_where_newer_hosts_anchor_on_usage() -> None:
    newest = run(GateToy(), tool_conversation(4)).trace
    old = run(GateToy(), tool_conversation(4), hermes_version="0.19.0").trace
    assert (old["pressure_tokens"] == old["prompt_tokens_rough"]).all()
    # Newer hosts add the rows since the last reported usage to it: not the estimate.
    assert (newest["pressure_tokens"] != newest["prompt_tokens_rough"]).any()


def test_the_0_19_0_estimate_rounds_once_over_the_request() -> None:
    """Its pre-API figure is ``(Σ len(str(row)) + 3) // 4`` over the request copies (system row first),
    plus the tool schemas; one request of a plain conversation shows it exactly."""
    transcript = tool_conversation(1, with_tools=False)
    row = run(GateToy(), transcript, hermes_version="0.19.0", session_store=False).trace.iloc[0]
    sent = [{"role": "system", "content": "You are terse."}, transcript.messages[0]]
    assert row["prompt_tokens_rough"] == legacy_messages_tokens(sent)


class SeedToy(BaseToy):
    """Records every value the host (not a usage report) writes into ``last_prompt_tokens``."""

    def __init__(self) -> None:
        super().__init__()
        self.host_writes: list[int] = []
        self._reporting = False

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self._reporting = True
        try:
            super().update_from_response(usage)
        finally:
            self._reporting = False

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "last_prompt_tokens" and getattr(self, "_reporting", True) is False:
            self.host_writes.append(value)
        super().__setattr__(name, value)


def test_0_19_0_turn_start_writes_its_estimate_into_last_prompt_tokens() -> None:
    """0.19.0's preflight raises ``last_prompt_tokens`` to its estimate when larger (the post-tool
    gate reads it until the next usage report); newer hosts leave the reported count there."""
    result = run(SeedToy(), tool_conversation(6, seed=1), hermes_version="0.19.0")
    seeded = result.engine.host_writes
    assert run(SeedToy(), tool_conversation(6, seed=1)).engine.host_writes == []
    reported = result.trace["usage_prompt_tokens"].tolist()
    # From turn 3 the preflight runs (more rows than the protected head and tail): its estimate of the
    # persisted rows, the system prompt and the tools, above the count the last response reported.
    assert len(seeded) == 3
    assert all(write > reported[2 * turn - 1] for write, turn in zip(seeded, (3, 4, 5), strict=True))


def test_0_19_0_post_tool_gate_has_no_attempt_budget() -> None:
    """A turn of six tool steps over the threshold: newer hosts compact at most ``max_attempts``
    times a turn (post-tool and pre-API share them); 0.19.0's post-tool gate compacts at every step."""
    newest = run(KeepLastEngine(threshold_tokens=1, keep=2), tool_turn(6), session_store=False).compactions
    old = run(
        KeepLastEngine(threshold_tokens=1, keep=2), tool_turn(6), hermes_version="0.19.0", session_store=False
    ).compactions
    in_loop = newest[newest["trigger"].isin(["post_tool", "pre_api", "overflow"])]
    assert len(in_loop) == 3  # the turn's budget, spent
    assert (old["trigger"] == "post_tool").sum() == 6  # one pass after every tool step


def test_0_19_0_rows_carry_no_uids_and_the_store_stamps_what_it_wrote() -> None:
    """Engines get 0.19.0's rows: no message uids, and (with a session store) ``_db_persisted`` on
    every row the store has written: all but the turn's new user row at a turn-start compaction."""
    stamped = run(GateToy(threshold_tokens=1, keep=2), tool_conversation(4), hermes_version="0.19.0").engine
    plain = run(
        GateToy(threshold_tokens=1, keep=2), tool_conversation(4), hermes_version="0.19.0", session_store=False
    ).engine
    newest = run(GateToy(threshold_tokens=1, keep=2), tool_conversation(4)).engine
    assert stamped.inputs and plain.inputs and newest.inputs
    first = stamped.inputs[0]
    assert not any("message_uid" in row for rows in stamped.inputs for row in rows)
    assert [bool(row.get("_db_persisted")) for row in first] == [True] * (len(first) - 1) + [False]
    assert not any("_db_persisted" in row for rows in plain.inputs for row in rows)
    assert all("message_uid" in row for row in newest.inputs[0][:-1])  # the new ask gets its uid after
    assert not any("_db_persisted" in row for rows in newest.inputs for row in rows)


def test_0_19_0_truncates_an_oversized_output_inline() -> None:
    """With no terminal sandbox to write to (a replay has none), 0.19.0 keeps the preview and a note."""
    size = int(ToolResultBudget().threshold("search_files")) + 10_000
    call = {"id": "c1", "type": "function", "function": {"name": "search_files", "arguments": "{}"}}
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "line\n" * (size // 5)},
        {"role": "assistant", "content": "done"},
    ]
    old, newest = Requests(), Requests()
    replay(Transcript("big", rows, "sys", []), BaseToy(), HostSettings(hermes_version="0.19.0"), observers=[old])
    replay(Transcript("big", rows, "sys", []), BaseToy(), observers=[newest])
    kept = str(old.sent[-1][3]["content"])
    assert kept.startswith("line\n") and len(kept) < 2_000
    assert kept.endswith(
        f"[Truncated: tool response was {size // 5 * 5:,} chars. Full output could not be saved to sandbox.]"
    )
    assert str(newest.sent[-1][3]["content"]).startswith("<persisted-output>")


def test_the_compressor_follows_the_host_version_unless_told_otherwise() -> None:
    settings = HostSettings(hermes_version="0.19.0")
    built = follow_host_version(CompressorEngine(), "compressor", None, settings.hermes_version)
    assert getattr(built, "hermes_rules", None) == "0.19.0"
    told = CompressorEngine(hermes_rules="newest")
    assert follow_host_version(told, "compressor", {"hermes_rules": "newest"}, "0.19.0") is told
    instance = CompressorEngine()
    assert follow_host_version(instance, instance, None, "0.19.0") is instance
    assert follow_host_version(instance, "compressor", None, "newest") is instance


def test_legacy_columns_count_each_store_stamp_once() -> None:
    rows: list[Message] = [
        {"role": "user", "content": "first ask"},
        {"role": "assistant", "content": "  a reply  ", "reasoning": None, "finish_reason": "stop"},
        {"role": "user", "content": "kept stamped", "_db_persisted": True},
    ]
    columns = LegacyRoughColumns(echo_reasoning=False)
    for row in rows:
        columns.add(row)
    assert columns.persisted_tokens == legacy_messages_tokens(rows)
    columns.stamp_all()  # the first two gain the stamp; the third had it
    stamped = [{**row, "_db_persisted": True} for row in rows]
    assert columns.persisted_tokens == legacy_messages_tokens(stamped)
    assert legacy_message_chars(stamped[0])[0] - legacy_message_chars(rows[0])[0] == STORE_MARKER_CHARS
    columns.truncate(1)
    columns.add({"role": "user", "content": "new"})
    assert columns.stamped == 1
    assert columns.persisted_tokens == legacy_messages_tokens([stamped[0], {"role": "user", "content": "new"}])


def test_0_19_0_always_allows_three_passes_a_turn() -> None:
    """0.19.0 has no ``compression.max_attempts``: a turn gets three passes whatever it says, and the
    replay says so once in its warnings."""
    assert HostSettings(max_attempts=5, hermes_version="0.19.0").attempts_per_turn == 3
    assert HostSettings(max_attempts=5).attempts_per_turn == 5
    few = run(KeepLastEngine(threshold_tokens=1, keep=2), tool_turn(6), max_attempts=1, session_store=False)
    in_loop = few.compactions[few.compactions["trigger"].isin(["post_tool", "pre_api", "overflow"])]
    assert len(in_loop) == 1 and few.warnings == []
    old = run(
        KeepLastEngine(threshold_tokens=1, keep=2),
        tool_turn(6),
        max_attempts=1,
        hermes_version="0.19.0",
        session_store=False,
    )
    default = run(
        KeepLastEngine(threshold_tokens=1, keep=2), tool_turn(6), hermes_version="0.19.0", session_store=False
    )
    assert old.compactions["trigger"].tolist() == default.compactions["trigger"].tolist()
    assert old.warnings == [
        "max_attempts=1 has no effect under hermes_version 0.19.0: that host always allows 3 compaction passes a turn"
    ]


class CoolingToy(KeepLastEngine):
    """Over the threshold, but reporting an active compression-failure cooldown."""

    def get_active_compression_failure_cooldown(self) -> dict[str, Any] | None:
        return {"remaining_seconds": 60.0}


@pytest.mark.parametrize("version", ["newest", "0.19.0"])
def test_a_reported_cooldown_skips_the_turn_start_and_pre_api_gates(version: str) -> None:
    """Both hosts skip those two gates while the engine reports a cooldown (newest
    ``agent/turn_context_compaction.py`` @``e1805ec7``; 0.19.0 ``agent/turn_context.py``,
    ``agent/conversation_loop.py``); an engine without the method compacts there."""
    cooling = run(CoolingToy(threshold_tokens=1, keep=2), tool_conversation(6), hermes_version=version)
    plain = run(KeepLastEngine(threshold_tokens=1, keep=2), tool_conversation(6), hermes_version=version)
    gated = ["preflight", "pre_api"]
    assert plain.compactions["trigger"].isin(gated).any()
    assert not cooling.compactions["trigger"].isin(gated).any()
