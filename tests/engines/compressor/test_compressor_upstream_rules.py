"""Rules of the newest upstream compressor the port follows (see docs/compressor.md, rule table)."""

from __future__ import annotations

import json

import yaml
from builders import call, conversation

from contextlab.engines.compressor import CompressorEngine, assembly, inflight, lean, pruning, texts
from contextlab.engines.summarizers import FunctionSummarizer, SummaryRequest
from contextlab.messages import validate_messages
from contextlab.tokens import RoughCounter


def engine(**kwargs: object) -> CompressorEngine:
    e = CompressorEngine(**kwargs)  # type: ignore[arg-type]
    e.update_model("gpt-4o", 64_000)
    return e


def big_turns(n: int, chars: int = 9_000) -> list[dict[str, object]]:
    return conversation(n, chars)


# --------------------------------------------------------------------------- proactive prune runway


def test_prune_runway_blocks_until_history_regrows_and_compaction_rearms() -> None:
    """``prune_tool_results_only``: after a committed prune no prune until the message estimate has
    grown past its post-prune size by ``max(reclaimed, proactive_prune_tokens, min reclaim)``."""
    e = engine(proactive_prune_tokens=20_000)
    history = big_turns(30)
    pruned, n = e.prune_tool_results_only(history, current_tokens=30_000)
    assert n > 0 and pruned is not history
    after = sum(pruning.message_budget_tokens(m) for m in pruned)
    reclaimed = sum(pruning.message_budget_tokens(m) for m in history) - after
    assert e._prune_rearm_tokens == after + max(reclaimed, 20_000, 4_096)
    grown = pruned + big_turns(34)[len(history) :]  # four new turns, well under the runway
    assert sum(pruning.message_budget_tokens(m) for m in grown) < e._prune_rearm_tokens
    same, zero = e.prune_tool_results_only(grown, current_tokens=30_000)
    assert zero == 0 and same is grown
    # A billed reading at or over the compaction threshold bypasses the runway (#101889) ...
    bypass, k = e.prune_tool_results_only(grown, current_tokens=e.threshold_tokens)
    assert k > 0 and bypass is not grown
    # ... and a committed compaction rearms it completely.
    e._prune_rearm_tokens = 10**9
    e.compress(big_turns(40))
    assert e._prune_rearm_tokens == 0


def test_no_prune_when_history_is_within_tail_and_head() -> None:
    e = engine(proactive_prune_tokens=1_000, protect_last_n=20)
    history = big_turns(6)  # 24 rows <= 20 + 3 + 1
    assert len(history) <= 20 + e.head_size(history) + 1
    assert e.prune_tool_results_only(history, current_tokens=50_000) == (history, 0)


def test_argument_truncation_is_not_a_pruned_row() -> None:
    """Pass 3 rewrites long tool-call arguments but upstream only counts pass 1/2 rows."""
    calls = [call(f"w{i}", "write_file", path=f"f{i}.py", content="x" * 2_000) for i in range(3)]
    history: list[dict[str, object]] = [{"role": "user", "content": "write them"}]
    for i, c in enumerate(calls):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [c]},
            {"role": "tool", "tool_call_id": f"w{i}", "content": "ok"},
        ]
    history += [{"role": "user", "content": "thanks"}]
    result = pruning.prune_tool_outputs(history, protect_tail_count=1, protect_tail_tokens=None)
    assert result.pruned == 0 and result.saved_tokens > 0
    assert "⟪HERMES-CONTEXT-COMPRESSION:" in result.messages[1]["tool_calls"][0]["function"]["arguments"]


def test_one_line_summaries_use_upstream_formats() -> None:
    from contextlab.engines.compressor import tool_summary as ts

    long_cmd = "python -m pytest " + "tests/very/long/path " * 6
    assert ts.summarize("terminal", json.dumps({"command": long_cmd}), '{"exit_code": 1}\nfail') == (
        f"[terminal] ran `{long_cmd[:77]}...` -> exit 1, 2 lines output"
    )
    assert (
        ts.summarize("read_file", '{"path": "a.py"}', "x" * 12_345)
        == "[read_file] read a.py from line 1 (12,345 chars)"
    )
    assert ts.summarize("web_search", '{"query": "q"}', "y" * 1_500) == "[web_search] query='q' (1,500 chars result)"
    body = ts.summarize("skill_view", '{"name": "deploy"}', "z" * 6_000)
    assert body == "[skill_view] name=deploy (6,000 chars) " + texts.SKILL_PRUNED.format(skill="deploy")
    assert ts.summarize("mystery", '{"a": 1, "b": "two", "c": 3}', "w" * 10) == "[mystery] a=1 b=two (10 chars result)"
    assert ts.summarize("unknown", "not json", "v" * 2_000) == "[unknown] (2,000 chars result)"


def test_recently_loaded_skill_body_survives_pass_two() -> None:
    skill = [
        {"role": "user", "content": "use the deploy skill"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "s1", "type": "function", "function": {"name": "skill_view", "arguments": '{"name": "deploy"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "s1", "content": "step " * 2_000},
    ]
    work = [*skill, *conversation(2, 300)]
    assert pruning.summarize_old_results(work, len(work), 200) == 2  # the two read_file results only
    assert work[2]["content"].startswith("step ")


# --------------------------------------------------------------------------- texts


def test_texts_file_names_a_source_for_every_text() -> None:
    data = yaml.safe_load(texts.resources.files("contextlab").joinpath("data", "hermes_texts.yaml").read_text("utf-8"))
    entries = [*data["texts"].values(), *data["historical_summary_prefixes"]]
    for entry in entries:
        source = entry["source"]
        assert "@" in source["repo_commit"] and source["path"] == "agent/context_compressor.py" and source["symbol"]
    assert texts.SUMMARY_PREFIX.startswith("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted")
    assert texts.SUMMARY_PREFIX.endswith("avoid repeating it:")
    # Historical prefixes are matched longest-first wherever one is a prefix of another.
    prefixes = texts.ALL_PREFIXES
    for i, early in enumerate(prefixes):
        for later in prefixes[i + 1 :]:
            assert not later.startswith(early) or len(later) <= len(early)


# --------------------------------------------------------------------------- assembly metadata


def test_tail_rows_carry_compaction_tail_key_counted_by_the_rough_estimator() -> None:
    e = engine()
    out = e.compress(big_turns(40, 4_000))
    carried = [m for m in out if m.get("_compaction_tail")]
    assert carried
    plain = [{k: v for k, v in m.items() if k != "_compaction_tail"} for m in carried]
    counter = RoughCounter()
    assert counter.messages(carried) > counter.messages(plain)  # never sent, but it moves thresholds


# --------------------------------------------------------------------------- lean sections


def test_lean_summary_appends_anchor_index_user_messages_and_recovery_pointer() -> None:
    e = engine()
    e.on_session_start("sess-1")
    history = big_turns(40, 4_000)
    history[4] = {"role": "user", "content": "please fix src/app/main.py and see #12345 before commit 0123456789abcdef"}
    out = e.compress(history)
    text = str(next(m for m in out if assembly.is_handoff(m))["content"])
    assert texts.text("lean_anchor_heading") in text and "src/app/main.py" in text and "#12345" in text
    assert texts.text("lean_user_heading") in text and "> please fix src/app/main.py" in text
    assert "session_search(query='<keywords>', session_id='sess-1')" in text
    legacy = engine(tail_mode="legacy").compress(big_turns(40, 4_000))
    assert texts.text("lean_user_heading") not in str(next(m for m in legacy if assembly.is_handoff(m))["content"])


def test_lean_demotes_stale_tail_tool_results_beyond_six_rounds() -> None:
    rows = conversation(9, 2_000)
    out = lean.demote_stale_tail_tools(rows, 0, "s")
    stubs = [m for m in out if str(m.get("content", "")).startswith("[tool output demoted at compaction")]
    assert len(stubs) == 3  # nine tool rounds, the newest six kept
    assert "2,000 chars preserved in session history. Recover with session_search" in str(stubs[0]["content"])


# --------------------------------------------------------------------------- in-flight restatement


def test_unfinished_task_in_the_head_is_restated_after_the_boundary() -> None:
    task = {"role": "user", "content": "run the nightly report"}
    history: list[dict[str, object]] = [{"role": "system", "content": "cron"}, task]
    for i in range(30):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{i}", "terminal", command=f"step {i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "out " * 800},
        ]
    assert inflight.find(history) is task
    e = engine()
    out = e.compress(history)
    assert validate_messages(out) == []
    last_users = [m for m in out if m.get("role") == "user" and texts.INFLIGHT_HEADER in str(m.get("content"))]
    carrier = [m for m in out if m.get(inflight.MERGED_KEY)]
    assert last_users or carrier
    restated = (last_users or carrier)[-1]
    assert str(restated["content"]).endswith("run the nightly report")


def test_answered_task_is_not_restated() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert inflight.find(history) is None


# --------------------------------------------------------------------------- summarizer seam


def test_summarizer_receives_the_hosts_exact_prompt_with_section_headings() -> None:
    seen: list[SummaryRequest] = []

    def fake(prompt: str, request: SummaryRequest) -> str:
        seen.append(request)
        return "## Historical Task Snapshot\nUser asked: x\n\n## Goal\nfake"

    e = engine(summarizer=FunctionSummarizer(fake, "fake"))
    out = e.compress(big_turns(40, 4_000))
    (request,) = seen
    assert request.prompt.startswith("You are a summarization agent creating a context checkpoint.")
    for heading in (
        "## Historical Task Snapshot",
        "## Completed Actions",
        "## Errors & Fixes",
        "## Detailed Session Log (oldest first)",
    ):
        assert heading in request.prompt
    assert "TURNS TO SUMMARIZE:\n[USER]: Task 3:" in request.prompt or "TURNS TO SUMMARIZE:\n[" in request.prompt
    assert request.turns and "fake" in str(next(m for m in out if assembly.is_handoff(m))["content"])
