"""Micro-compaction (``compression.micro_compact``), rule by rule after upstream's behaviour
(``docs/compressor.md``, section "Micro-compaction")."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from contextlab.engines.compressor import CompressorEngine, assembly, boundaries, micro
from contextlab.engines.summarizers import FunctionSummarizer, SummaryRequest
from contextlab.engines.summarizers.base import FailureKind, SummaryFailure
from contextlab.engines.summarizers.prompt import HISTORICAL_TASK_HEADING
from contextlab.tokens import RoughCounter

Message = dict[str, Any]


def engine(summary: str | Callable[[str, SummaryRequest], str] = "ROLLING SUMMARY", **kwargs: Any) -> CompressorEngine:
    fn = summary if callable(summary) else (lambda _prompt, _request: summary)
    settings: dict[str, Any] = {"protect_first_n": 1, "protect_last_n": 2, "micro_compact": True, **kwargs}
    e = CompressorEngine(summarizer=FunctionSummarizer(fn), **settings)
    e.update_model("test-model", 40_960)
    return e


def conversation(exchanges: int = 6) -> list[Message]:
    rows: list[Message] = [{"role": "system", "content": "system prompt"}]
    for i in range(exchanges):
        rows.append({"role": "user", "content": f"question {i}"})
        rows.append({"role": "assistant", "content": f"answer {i} " + "z" * 400})
    return rows


def tool_conversation(turns: int = 8, calls: int = 3, followup: bool = False) -> list[Message]:
    rows: list[Message] = [{"role": "system", "content": "sys"}]
    for i in range(turns):
        rows.append({"role": "user", "content": f"q{i}"})
        ids = [f"c{i}-{j}" for j in range(calls)]
        rows.append(
            {
                "role": "assistant",
                "content": f"a{i}",
                "tool_calls": [
                    {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in ids
                ],
            }
        )
        rows.extend({"role": "tool", "tool_call_id": c, "content": "T" * 500} for c in ids)
        if followup:  # a second request of the same turn before the next user message
            rows.append({"role": "assistant", "content": f"followup {i} " + "y" * 200})
    return rows


def markers(rows: list[Message]) -> list[Message]:
    return [m for m in rows if m.get(assembly.SUMMARY_KEY)]


def test_off_by_default_and_a_no_op_when_off() -> None:
    e = CompressorEngine()
    rows = conversation()
    assert e.micro_compact is False
    assert e.micro_compact_after_turn(rows) is rows
    on = engine()
    on.micro_compact = False
    assert on.micro_compact_after_turn(rows) is rows


def test_one_pass_absorbs_the_oldest_exchange_into_an_assistant_marker() -> None:
    rows = conversation()
    out = engine().micro_compact_after_turn([dict(m) for m in rows])
    assert not any("answer 0" in str(m.get("content")) for m in out)
    assert len(out) == len(rows)  # one assistant row became one marker
    [marker] = markers(out)
    assert marker["role"] == "assistant"  # user -> marker -> user alternates
    assert marker[micro.MICRO_KEY] is True and marker[assembly.HAS_USER_KEY] is False
    assert marker["content"] == micro.render_marker("ROLLING SUMMARY")
    assert marker["content"].startswith(assembly.SUMMARY_PREFIX + "\n\n" + HISTORICAL_TASK_HEADING + "\n")
    assert marker["content"].endswith("\n\n" + assembly.END_MARKER)
    assert out[0] == rows[0] and out[-1] == rows[-1]  # head and tail untouched


def test_cadence_runs_every_nth_call_and_is_clamped_to_one() -> None:
    e = engine(micro_compact_every_n_turns=3)
    rows = conversation(8)
    first = e.micro_compact_after_turn(rows)
    second = e.micro_compact_after_turn(first)
    assert first is rows and second is rows and e.micro.cursor == 0
    third = e.micro_compact_after_turn(second)
    assert len(markers(third)) == 1 and e.micro.turns_since_pass == 0
    for bogus in (0, -5):
        assert len(markers(engine(micro_compact_every_n_turns=bogus).micro_compact_after_turn(conversation(8)))) == 1


def test_cursor_sits_just_past_the_marker_of_the_spliced_list() -> None:
    """A splice collapses an assistant and its results into one row: the cursor comes from the new list."""
    e = engine()
    rows = tool_conversation()
    for _ in range(4):
        rows = e.micro_compact_after_turn(rows)
        at = next(i for i, m in enumerate(rows) if m.get(assembly.SUMMARY_KEY))
        assert e.micro.cursor == at + 1


def test_passes_walk_forward_keep_one_marker_and_every_user_word() -> None:
    counter = {"n": 0}

    def growing(_prompt: str, _request: SummaryRequest) -> str:
        counter["n"] += 1
        return "SUMMARY " + " ".join(f"ex{i}" for i in range(counter["n"]))

    e = engine(growing)
    rows = conversation(12)
    users = [m["content"] for m in rows if m["role"] == "user"]
    before = RoughCounter().messages(rows)
    for _ in range(6):
        rows = e.micro_compact_after_turn(rows)
    assert len(markers(rows)) == 1
    assert RoughCounter().messages(rows) < before
    kept = "\n\n".join(m["content"] for m in rows if m["role"] == "user" and not m.get(assembly.SUMMARY_KEY))
    assert all(text in kept for text in users)
    assert e.micro.passes == 6 and e.micro.tokens_saved_total > 0
    for a, b in itertools.pairwise(rows):
        assert not (a["role"] == b["role"] and a["role"] in ("user", "assistant"))


def test_whole_agent_turns_are_absorbed_and_roles_alternate() -> None:
    e = engine()
    rows = tool_conversation(followup=True)
    for _ in range(4):
        rows = e.micro_compact_after_turn(rows)
        for a, b in itertools.pairwise(rows):
            assert not (a["role"] == b["role"] and a["role"] in ("user", "assistant"))
        assert all(m["role"] != "tool" or rows[i - 1]["role"] in ("assistant", "tool") for i, m in enumerate(rows))


def test_the_summarizer_gets_the_hosts_micro_prompt_and_the_running_summary() -> None:
    seen: list[SummaryRequest] = []

    def capture(_prompt: str, request: SummaryRequest) -> str:
        seen.append(request)
        return f"SUMMARY {len(seen)}"

    e = engine(capture)
    rows = e.micro_compact_after_turn(conversation(8))
    e.micro_compact_after_turn(rows)
    first, second = seen
    assert (
        "## Current Running Summary\n(No previous summary yet.)\n\n## Next Exchange to Merge\n[ASSISTANT]: answer 0"
        in (first.prompt)
    )
    assert first.prompt.startswith(
        "You are a summarization agent creating a compact record of an ongoing conversation.  "
    )
    assert first.previous_summary is None and [m["content"] for m in first.turns] == [conversation(8)[2]["content"]]
    assert "## Current Running Summary\nSUMMARY 1\n\n" in second.prompt and second.previous_summary == "SUMMARY 1"
    assert second.budget_tokens == min(1_500, e.max_summary_tokens)


def test_failed_summaries_leave_the_history_and_skip_a_poison_exchange() -> None:
    def fail(_prompt: str, _request: SummaryRequest) -> str:
        raise SummaryFailure(FailureKind.TIMEOUT, "down")

    e = engine(fail)
    rows = conversation()
    assert e.micro_compact_after_turn(rows) is rows and e.micro.failures == 1
    for _ in range(micro.MAX_CONSECUTIVE_FAILURES - 1):
        assert e.micro_compact_after_turn(rows) is rows
    assert e.micro.cursor == 3  # past "answer 0": the next pass tries new material
    assert e.micro.failures == 0 and e.micro.last.outcome == "exchange_skipped"


def test_a_reload_rehydrates_the_rolling_summary_and_supersedes_the_old_marker() -> None:
    rows = conversation(10)
    first = engine("IMPORTANT HISTORY: decisions and paths")
    for _ in range(3):
        rows = first.micro_compact_after_turn(rows)
    reloaded = [{k: v for k, v in m.items() if k != micro.MICRO_KEY} for m in rows]  # a store drops private keys
    previous: list[str | None] = []

    def merged(_prompt: str, request: SummaryRequest) -> str:
        previous.append(request.previous_summary)
        return "MERGED: history plus newest exchange"

    resumed = engine(merged)
    out = resumed.micro_compact_after_turn(reloaded)
    assert previous == ["IMPORTANT HISTORY: decisions and paths"]  # recovered from the marker
    [marker] = markers(out)
    assert "MERGED" in marker["content"] and "IMPORTANT HISTORY" not in marker["content"]


def test_rolling_summary_round_trips_through_a_marker() -> None:
    e = engine()
    e.micro.rolling_summary = "decisions: use the existing helper"
    e.micro_compact_after_turn(conversation())
    [marker] = markers(e.micro_compact_after_turn(conversation()))
    assert micro.rolling_summary_from_marker(marker["content"]) == e.micro.rolling_summary


def test_short_history_is_untouched() -> None:
    rows = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
    ]
    assert engine().micro_compact_after_turn(rows) is rows


def test_a_batch_compaction_marker_is_never_superseded_or_rewritten() -> None:
    e = engine("MICRO SUMMARY (exchanges 1..k only)")
    rows = e.micro_compact_after_turn(conversation(8))
    at = next(i for i, m in enumerate(rows) if m.get(assembly.SUMMARY_KEY))
    batch = {"role": "user", "content": "[batch summary] CRITICAL HISTORY: exchanges 1..m", assembly.SUMMARY_KEY: True}
    rows = [*rows[:at], batch, *rows[at + 3 :]]
    assert any("CRITICAL HISTORY" in str(m["content"]) for m in e.micro_compact_after_turn(rows))
    e.micro.rolling_summary = "x" * 40_000  # force a defrag
    assert any("CRITICAL HISTORY" in str(m["content"]) for m in e.micro_compact_after_turn(rows))


def test_defrag_rewrites_only_the_marker_text() -> None:
    seen: list[SummaryRequest] = []

    def fresh(_prompt: str, request: SummaryRequest) -> str:
        seen.append(request)
        return "FRESH DEFRAGGED SUMMARY" if len(seen) > 1 else "ROLLING"

    e = engine(fresh)
    rows = e.micro_compact_after_turn(conversation(8))
    e.micro.rolling_summary = "OLD-SUMMARY " + "x" * 40_000
    cursor, shape = e.micro.cursor, [m["role"] for m in rows]
    assert e.micro.needs_defrag()
    out = e.micro_compact_after_turn(rows)
    assert out is not rows and [m["role"] for m in out] == shape and e.micro.cursor == cursor
    assert e.micro.rolling_summary == "FRESH DEFRAGGED SUMMARY" and e.micro.last.outcome == "defrag"
    [marker] = markers(out)
    assert "FRESH DEFRAGGED SUMMARY" in marker["content"]
    assert seen[-1].turns == [] and "[USER]" not in seen[-1].prompt and "OLD-SUMMARY" in seen[-1].prompt
    assert "## Current Running Summary\n(No previous summary yet.)" in seen[-1].prompt


def test_a_batch_compaction_restarts_the_rolling_state() -> None:
    e = engine()
    e.update_model("test-model", 8_000)
    rows = e.micro_compact_after_turn(conversation(40))
    assert e.micro.rolling_summary and e.micro.cursor > 0
    assert e.compress(rows, force=True) is not rows
    assert e.micro.rolling_summary == "" and e.micro.cursor == 0
    e.micro.rolling_summary, e.micro.passes = "x", 3
    e.on_session_reset()
    assert e.micro.rolling_summary == "" and e.micro.passes == 0


@pytest.mark.parametrize("kind", ["user", "assistant"])
def test_a_handoff_merged_into_a_live_row_keeps_its_payload(kind: str) -> None:
    """Only a standalone marker is adopted: superseding a merged carrier would drop its live content."""
    carrier = {
        "role": kind,
        "content": assembly.summary_message(assembly.with_summary_prefix("Old facts."), kind, False)["content"]
        + "\n\nLIVE CARRIER PAYLOAD",
        assembly.SUMMARY_KEY: True,
    }
    rows: list[Message] = [{"role": "system", "content": "system"}, carrier]
    for i in range(8):
        rows += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i} " + "x" * 400},
        ]
    e = engine("Fresh rolling facts.", protect_first_n=0)
    out = e.micro_compact_after_turn(rows)
    out = e.micro_compact_after_turn(out)
    assert any("Fresh rolling facts." in str(m["content"]) for m in out)
    kept = next(m for m in out if "LIVE CARRIER PAYLOAD" in str(m["content"]))
    assert not kept.get(micro.MICRO_KEY)


def test_the_window_keeps_the_whole_active_turn() -> None:
    """An oversized active turn is not split to let a pass reach into it (``0000416b`` has no split)."""
    rows: list[Message] = [{"role": "system", "content": "s"}, {"role": "user", "content": "old"}]
    rows.append({"role": "assistant", "content": "older request completed"})
    rows.append({"role": "user", "content": "do the big task"})
    for i in range(10):
        rows.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"t{i}", "function": {"name": "f"}}]})
        rows.append({"role": "tool", "tool_call_id": f"t{i}", "content": "R" * 8_000})
    assert boundaries.tail_cut_by_tokens(rows, 1, 2_000, protect_last_n=2) <= 3


def test_a_failed_defrag_keeps_the_summary_and_the_history() -> None:
    calls = {"n": 0}

    def first_only(_prompt: str, _request: SummaryRequest) -> str:
        calls["n"] += 1
        if calls["n"] > 1:
            raise SummaryFailure(FailureKind.NETWORK, "down")
        return "ROLLING"

    e = engine(first_only)
    rows = e.micro_compact_after_turn(conversation(8))
    e.micro.rolling_summary = big = "OLD " + "x" * 40_000
    assert e.micro_compact_after_turn(rows) is rows
    assert e.micro.rolling_summary == big and e.micro.last.outcome == "defrag_failed"
