"""Rules of upstream ``NousResearch/hermes-agent@0000416b`` and the newer upstream rules the port follows
(docs/compressor.md, rule table); each newer rule is also checked switched off under ``hermes_rules="0.19.0"``."""

from __future__ import annotations

import json

import yaml
from builders import call, conversation

from contextlab import hermes_texts as texts
from contextlab.engine import Message
from contextlab.engines.compressor import CompressorEngine, assembly, budgets, inflight, lean, pruning
from contextlab.engines.summarizers import FunctionSummarizer, SummaryRequest
from contextlab.messages import validate_messages
from contextlab.tokens import RoughCounter


def engine(**kwargs: object) -> CompressorEngine:
    e = CompressorEngine(**kwargs)  # type: ignore[arg-type]
    e.update_model("gpt-4o", 64_000)
    return e


def big_turns(n: int, chars: int = 9_000) -> list[dict[str, object]]:
    return conversation(n, chars)


# --------------------------------------------------------------------------- proactive prune runway (newer upstream)


def test_prune_runway_blocks_until_history_regrows_and_compaction_rearms() -> None:
    """``prune_tool_results_only``: after a committed prune no prune until the message estimate has
    grown past its post-prune size by ``max(reclaimed, proactive_prune_tokens, min reclaim)``."""
    e = engine(proactive_prune_tokens=20_000)
    history = big_turns(30)
    pruned, n = e.prune_tool_results_only(history, current_tokens=30_000)
    assert n > 0 and pruned is not history
    after = sum(pruning.message_budget_tokens(m) for m in pruned)
    reclaimed = sum(pruning.message_budget_tokens(m) for m in history) - after
    assert e._prune_rearm_tokens == after + max(reclaimed, 20_000, e.proactive_prune_min_reclaim_tokens)
    grown = pruned + big_turns(34)[len(history) :]  # four new turns, well under the runway
    assert sum(pruning.message_budget_tokens(m) for m in grown) < e._prune_rearm_tokens
    same, zero = e.prune_tool_results_only(grown, current_tokens=30_000)
    assert zero == 0 and same is grown
    # A billed reading at or over the compaction threshold bypasses the runway ...
    bypass, k = e.prune_tool_results_only(grown, current_tokens=e.threshold_tokens)
    assert k > 0 and bypass is not grown
    # ... and a committed compaction rearms it completely.
    e._prune_rearm_tokens = 10**9
    e.compress(big_turns(40))
    assert e.compression_count == 1 and e._prune_rearm_tokens == 0


def test_proactive_prune_has_no_runway_between_commits_in_0_19_0() -> None:
    """0.19.0 (and 0000416b): gate, size guard and reclaim minimum only; a second prune on a regrown
    history commits as soon as it reclaims enough (no re-arm runway)."""
    e = engine(proactive_prune_tokens=20_000, hermes_rules="0.19.0")
    history = big_turns(30)
    pruned, n = e.prune_tool_results_only(history, current_tokens=30_000)
    assert n > 0 and pruned is not history
    grown = pruned + big_turns(34)[len(history) :]  # four new turns push one more result out of the tail
    again, k = e.prune_tool_results_only(grown, current_tokens=30_000)
    assert k > 0 and again is not grown
    assert e.prune_tool_results_only(again, current_tokens=19_999) == (again, 0)  # under the gate


def test_proactive_prune_commits_only_at_the_minimum_reclaim() -> None:
    history = big_turns(30, 9_000)
    e = engine(proactive_prune_tokens=1_000, proactive_prune_min_reclaim_tokens=10**7)
    assert e.prune_tool_results_only(history, current_tokens=50_000) == (history, 0)


def test_no_prune_when_history_is_within_tail_and_head() -> None:
    e = engine(proactive_prune_tokens=1_000, protect_last_n=20)
    history = big_turns(6)  # 24 rows <= 20 + 3 + 1
    assert len(history) <= 20 + e.head_size(history) + 1
    assert e.prune_tool_results_only(history, current_tokens=50_000) == (history, 0)


# --------------------------------------------------------------------------- pruning passes


def _writes(content: str, n: int = 3) -> list[dict[str, object]]:
    history: list[dict[str, object]] = [{"role": "user", "content": "write them"}]
    for i in range(n):
        history += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call(f"w{i}", "write_file", path=f"f{i}.py", content=content)],
            },
            {"role": "tool", "tool_call_id": f"w{i}", "content": "ok"},
        ]
    return [*history, {"role": "user", "content": "thanks"}]


def test_argument_truncation_is_not_a_pruned_row() -> None:
    """Pass 3 cuts long string leaves to 200 chars plus ``...[truncated]``; upstream counts only
    pass 1/2 rows as pruned."""
    history = _writes("x" * 2_000)
    result = pruning.prune_tool_outputs(history, protect_tail_count=1, protect_tail_tokens=None)
    assert result.pruned == 0 and result.saved_tokens > 0
    args = json.loads(result.messages[1]["tool_calls"][0]["function"]["arguments"])
    assert args["content"] == "x" * 200 + "...[truncated]" and args["path"] == "f0.py"


def test_long_compact_argument_json_is_reserialised_even_without_a_cut() -> None:
    """Upstream keeps the re-serialised JSON whenever it differs from the original bytes, so a compact
    blob over 500 chars gains ``json.dumps``' spacing although no leaf is over 200 chars."""
    rows = [{"role": "user", "content": "go"}]
    compact = json.dumps({f"k{i}": "v" * 30 for i in range(20)}, separators=(",", ":"))
    assert len(compact) > 500
    rows += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "x", "arguments": compact}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    out = pruning.prune_tool_outputs(rows, protect_tail_count=1, protect_tail_tokens=None).messages
    assert out[1]["tool_calls"][0]["function"]["arguments"] == json.dumps(json.loads(compact), ensure_ascii=False)


def test_pruning_boundary_protects_the_row_that_breaks_the_budget() -> None:
    """``_prune_old_tool_results``: the walk stops at the first row over the token budget and that row
    is protected too (the boundary is its index)."""
    rows = conversation(12, 2_000)
    costs = [pruning.message_budget_tokens(m) for m in rows]
    budget = sum(costs[-10:]) - 1  # the tenth-newest row breaks it
    assert pruning.protected_tail_start(rows, 3, budget) == len(rows) - 10
    # the count floor (capped at 8) wins over a tiny budget; uncapped (0.19.0) protect_last_n wins
    assert pruning.protected_tail_start(rows, 20, 1) == len(rows) - 8
    assert pruning.protected_tail_start(rows, 20, 1, floor_cap=None) == len(rows) - 20


def test_pressure_demotion_summarises_protected_results_but_keeps_the_last_three_rows() -> None:
    """Pass 4 (#61932): a protected region over 1.5 × budget has its tool bodies summarised oldest
    first until it fits; the last three rows stay verbatim while that suffices."""
    rows = [*conversation(4, 6_000), {"role": "user", "content": "and now?"}]
    start = pruning.protected_tail_start(rows, 20, 100_000, floor_cap=None)
    assert start == 0
    work = list(rows)
    changed = pruning.demote_under_pressure(work, 0, 2_000)
    assert changed >= 1
    assert work[-3:] == rows[-3:]
    assert sum(pruning.message_budget_tokens(m) for m in work) <= 3_000
    assert work[2]["content"].startswith("[read_file] read src/module_0.py from line 1 (6,000 chars)")


def test_replay_fields_are_counted_as_sorted_json_without_their_ciphertext() -> None:
    from contextlab.engines.compressor.budgets import message_budget_tokens, message_budget_tokens_floor

    blob = [{"type": "reasoning", "encrypted_content": "e" * 400, "id": "r1", "summary": [{"text": "s" * 40}]}]
    row = {"role": "assistant", "content": "", "codex_reasoning_items": blob}
    blanked = [{**blob[0], "encrypted_content": ""}]
    # newer upstream prices the ciphertext by the provider's count alone (strip_opaque_replay_items)
    assert message_budget_tokens(row) == 10 + len(json.dumps(blanked, ensure_ascii=False, sort_keys=True)) // 4
    assert message_budget_tokens(row, charge_stale_thinking=False) == message_budget_tokens(row)  # always replayed
    # 0.19.0 charged the whole serialized blob
    assert message_budget_tokens_floor(row) == 10 + len(json.dumps(blob, ensure_ascii=False, sort_keys=True)) // 4


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
    assert ts.summarize("skill_view", '{"name": "deploy"}', "z" * 6_000) == "[skill_view] name=deploy (6,000 chars)"
    # newer upstream: a large skill body's one-liner carries the skill-pruning marker (small ones do not)
    marked = ts.summarize("skill_view", '{"name": "deploy"}', "z" * 6_000, skill_marker=True)
    assert marked == "[skill_view] name=deploy (6,000 chars) " + texts.SKILL_PRUNED.format(skill="deploy")
    assert texts.SKILL_PRUNED.format(skill="deploy").startswith("[SKILL_PRUNED: ")
    small = ts.summarize("skill_view", '{"name": "d"}', "z" * 5_000, skill_marker=True)
    assert small == "[skill_view] name=d (5,000 chars)"
    assert ts.summarize("clarify", "{}", '{"user_response": "yes"}') == "[clarify] asked user a question"
    assert ts.summarize("mystery", '{"a": 1, "b": "two", "c": 3}', "w" * 10) == "[mystery] a=1 b=two (10 chars result)"
    assert ts.summarize("unknown", "not json", "v" * 2_000) == "[unknown] (2,000 chars result)"


def _skill_history() -> list[dict[str, object]]:
    skill: list[dict[str, object]] = [
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
    return [*skill, *conversation(2, 300)]


def test_recently_loaded_skill_body_survives_pass_two() -> None:
    """Newer upstream ``_collect_protected_skill_names``: a skill loaded in the last 10 messages keeps
    its body through pass 2; the other results are summarised."""
    work = _skill_history()
    assert pruning.summarize_old_results(work, len(work), 200, skill_rules=True) == 2  # the read_file results
    assert str(work[2]["content"]).startswith("step ")


def test_old_skill_body_is_pruned_with_the_marker() -> None:
    """Out of the recent window and not named by a tail user message: pruned, with the marker."""
    work = [*_skill_history(), *conversation(4, 300)]
    boundary = len(work) - 2
    assert pruning.summarize_old_results(work, boundary, 200, skill_rules=True) >= 1
    assert work[2]["content"] == "[skill_view] name=deploy (10,000 chars) " + texts.SKILL_PRUNED.format(skill="deploy")
    # a tail user message naming the skill protects it again
    named = [*_skill_history(), *conversation(4, 300), {"role": "user", "content": "redo the Deploy steps"}]
    pruning.summarize_old_results(named, len(named) - 1, 200, skill_rules=True)
    assert str(named[2]["content"]).startswith("step ")


def test_compress_default_applies_the_skill_rules_and_0_19_0_does_not() -> None:
    work = _skill_history()
    new = pruning.prune_tool_outputs(work, protect_tail_count=1, protect_tail_tokens=None).messages
    old = pruning.prune_tool_outputs(
        work, protect_tail_count=1, protect_tail_tokens=None, rules=CompressorEngine(hermes_rules="0.19.0").rules
    ).messages
    assert str(new[2]["content"]).startswith("step ")
    assert old[2]["content"] == "[skill_view] name=deploy (10,000 chars)"


def test_skill_bodies_get_no_special_protection_in_0_19_0() -> None:
    work = _skill_history()
    assert pruning.summarize_old_results(work, len(work), 200) == 3
    assert work[2]["content"] == "[skill_view] name=deploy (10,000 chars)"


# --------------------------------------------------------------------------- texts


def test_texts_file_names_a_source_for_every_text() -> None:
    data = yaml.safe_load(texts.resources.files("contextlab").joinpath("data", "hermes_texts.yaml").read_text("utf-8"))
    assert data["pin"]["upstream"].startswith("NousResearch/hermes-agent@0000416b")
    entries = {**data["texts"], **{f"historical{i}": e for i, e in enumerate(data["historical_summary_prefixes"])}}
    for key, entry in entries.items():
        source = entry["source"]
        if key == "stub_tool_result":  # the host loop's pre-call sanitizer, not the compressor
            assert source["repo_commit"].startswith("NousResearch/hermes-agent@08d0bafd")
            assert (source["path"], source["symbol"]) == ("agent/agent_runtime_helpers.py", "sanitize_api_messages")
            continue
        if key == "corrupted_arguments_marker":  # the host loop's history repair, not the compressor
            assert source["repo_commit"].startswith("NousResearch/hermes-agent@0009407f")
            assert source["path"] == "agent/agent_runtime_helpers.py"
            assert source["symbol"].startswith("sanitize_tool_call_arguments")
            continue
        assert "@" in source["repo_commit"] and source["path"] == "agent/context_compressor.py" and source["symbol"]
        # everything but the opt-in lean texts and the newer rules' texts follows the stored snapshot
        newer = key in ("skill_pruned_marker", "inflight_task_header", "max_iterations_summary_request")
        assert (
            key.startswith("lean_") or newer or source["repo_commit"].startswith("NousResearch/hermes-agent@0000416b")
        )
        if newer:
            assert "newer than nousresearch@0000416b" in entry["note"].lower()
    assert texts.SUMMARY_PREFIX.startswith("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted")
    assert texts.SUMMARY_PREFIX.endswith("avoid repeating it:")
    assert len(texts.HISTORICAL_PREFIXES) == 3
    # Historical prefixes are matched longest-first wherever one is a prefix of another.
    prefixes = texts.ALL_PREFIXES
    for i, early in enumerate(prefixes):
        for later in prefixes[i + 1 :]:
            assert not later.startswith(early) or len(later) <= len(early)


# --------------------------------------------------------------------------- assembly metadata


def test_tail_rows_carry_compaction_tail_key_counted_by_the_rough_estimator() -> None:
    """Newer upstream tags every carried tail row (the merged one too) with ``_compaction_tail``: never
    sent, but the rough estimator counts it, so it moves thresholds."""
    out = engine().compress(big_turns(40, 4_000))
    carried = [m for m in out if m.get("_compaction_tail")]
    assert carried and all(m.get("_compaction_tail") for m in out[-len(carried) :])
    plain = [{k: v for k, v in m.items() if k != "_compaction_tail"} for m in carried]
    counter = RoughCounter()
    assert counter.messages(carried) > counter.messages(plain)


def test_tail_rows_carry_no_extra_metadata_key_in_0_19_0() -> None:
    """0.19.0 (and 0000416b) copy tail rows as they are; only the summary row carries its key."""
    out = engine(hermes_rules="0.19.0").compress(big_turns(40, 4_000))
    keys = {k for m in out for k in m if k.startswith("_")}
    assert keys == {"_compressed_summary"}
    assert sum(1 for m in out if m.get("_compressed_summary")) == 1


# --------------------------------------------------------------------------- lean sections (opt-in, fork)


def test_lean_summary_appends_anchor_index_user_messages_and_recovery_pointer() -> None:
    e = engine(tail_mode="lean")
    e.on_session_start("sess-1")
    history = big_turns(40, 4_000)
    history[4] = {"role": "user", "content": "please fix src/app/main.py and see #12345 before commit 0123456789abcdef"}
    out = e.compress(history)
    text = str(next(m for m in out if assembly.is_handoff(m))["content"])
    assert texts.text("lean_anchor_heading") in text and "src/app/main.py" in text and "#12345" in text
    assert texts.text("lean_user_heading") in text and "> please fix src/app/main.py" in text
    assert "session_search(query='<keywords>', session_id='sess-1')" in text
    legacy = engine().compress(big_turns(40, 4_000))
    assert texts.text("lean_user_heading") not in str(next(m for m in legacy if assembly.is_handoff(m))["content"])


def test_lean_demotes_stale_tail_tool_results_beyond_six_rounds() -> None:
    rows = conversation(9, 2_000)
    out = lean.demote_stale_tail_tools(rows, 0, "s")
    stubs = [m for m in out if str(m.get("content", "")).startswith("[tool output demoted at compaction")]
    assert len(stubs) == 3  # nine tool rounds, the newest six kept
    assert "2,000 chars preserved in session history. Recover with session_search" in str(stubs[0]["content"])


# --------------------------------------------------------------------------- no-ops: backoff (newer) or strike (0.19.0)


def test_a_no_op_compaction_is_a_structural_backoff() -> None:
    """Newer upstream (#93022): a no-op arms ``structural_backoff`` for 300 s, no strike."""
    e = engine()
    tiny = conversation(1)
    assert e.compress(tiny) is tiny
    assert e.thrash.ineffective == 0
    ok, reason = e.should_compress_info(e.threshold_tokens)
    assert not ok and str(reason).startswith("structural_backoff:")


def test_a_no_op_compaction_is_an_ineffective_strike_in_0_19_0() -> None:
    """0.19.0 (and 0000416b): too few messages, no compressible window or a handoff-only window each
    record one ineffective strike; two strikes block automatic compaction."""
    e = engine(hermes_rules="0.19.0")
    tiny = conversation(1)
    assert e.compress(tiny) is tiny
    assert e.thrash.ineffective == 1
    e.compress(tiny)
    assert e.should_compress_info(e.threshold_tokens) == (False, "ineffective")


def _unfinished_task() -> tuple[dict[str, object], list[dict[str, object]]]:
    task: dict[str, object] = {"role": "user", "content": "run the nightly report"}
    history: list[dict[str, object]] = [{"role": "system", "content": "cron"}, task]
    for i in range(30):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{i}", "terminal", command=f"step {i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "out " * 800},
        ]
    return task, history


def test_unfinished_task_is_restated_after_the_boundary() -> None:
    """Newer upstream (#100818): the newest ask, still unanswered and summarised away, is restated
    after the summary under the fixed header."""
    task, history = _unfinished_task()
    e = engine(protect_first_n=0)
    assert inflight.find(history) is task
    out = e.compress(history)
    assert validate_messages(out) == []
    restated = [m for m in out if texts.INFLIGHT_HEADER in str(m.get("content"))]
    assert len(restated) == 1
    assert str(restated[0]["content"]).endswith("run the nightly report")
    assert out.index(restated[0]) > next(i for i, m in enumerate(out) if assembly.is_handoff(m)) or restated[0].get(
        inflight.MERGED_KEY
    )
    off = engine(protect_first_n=0, hermes_rules="0.19.0").compress(history)
    assert not any(texts.INFLIGHT_HEADER in str(m.get("content")) for m in off)


def test_answered_task_is_not_restated() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert inflight.find(history) is None


def test_unfinished_task_in_the_head_is_summarised_not_restated_in_0_19_0() -> None:
    """0.19.0 (and 0000416b) have no in-flight restatement: an unanswered ask in the head is carried
    once; the newest rules restate it after the summary too (it sits before the boundary)."""
    task, history = _unfinished_task()
    restated = engine().compress(history)
    assert sum(1 for m in restated if "nightly" in str(m.get("content"))) == 2
    out = engine(hermes_rules="0.19.0").compress(history)
    assert validate_messages(out) == []
    # the ask sits in the protected head and is carried once; nothing restates it after the summary
    assert [m for m in out if "nightly" in str(m.get("content"))] == [task]


# --------------------------------------------------------------------------- 0.19.0 rules


def test_0_19_0_rules_switch_each_version_change_back() -> None:
    """``hermes_rules="0.19.0"``: raw neighbour roles, no ``has_user`` key, no restart probe."""
    old = engine(hermes_rules="0.19.0")
    new = engine()
    history = big_turns(40, 4_000)
    out_old = old.compress(history)
    out_new = new.compress(history)
    assert all("_compressed_summary_has_user_turn" not in m for m in out_old)
    assert any("_compressed_summary_has_user_turn" in m for m in out_new)
    resumed = [{"role": "user", "content": texts.SUMMARY_PREFIX + "\nold"}, *history]
    assert new.__class__(hermes_rules="0.19.0").effective_protect_first_n(resumed) == 3
    assert new.__class__().effective_protect_first_n(resumed) == 0


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
    ):
        assert heading in request.prompt
    assert "TURNS TO SUMMARIZE:\n[USER]: Task 3:" in request.prompt or "TURNS TO SUMMARIZE:\n[" in request.prompt
    assert request.turns and "fake" in str(next(m for m in out if assembly.is_handoff(m))["content"])


def test_0_19_0_estimates_floor_the_tail_walk_and_count_every_key() -> None:
    """0.19.0's ``_estimate_msg_budget_tokens`` floors ``len // 4`` where 0000416b rounds up, and its
    ``estimate_messages_tokens_rough`` counts every key (message uids included) with one ceiling."""
    from contextlab.engines.compressor import budgets

    row = {"role": "user", "content": "x" * 41, "message_uid": "u" * 32}
    assert budgets.message_budget_tokens(row) == 10 + 11
    assert budgets.message_budget_tokens_floor(row) == 10 + 10
    assert budgets.rough_messages_0_19_0([row, row]) == (2 * len(str(row)) + 3) // 4


def _reasoning_session(pairs: int = 30) -> list[Message]:
    rows: list[Message] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Fix it."}]
    for i in range(pairs):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        thought = "think " * 1_400
        rows.append({"role": "assistant", "content": f"step {i}", "reasoning_content": thought, "tool_calls": [call]})
        rows.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 6_000})
    rows.append({"role": "assistant", "content": "done", "reasoning_content": "final " * 1_400})
    return rows


def test_the_tail_walk_charges_reasoning_on_the_newest_turn_unless_the_route_echoes_it() -> None:
    """Newer upstream: a strict route sends only the newest assistant turn's reasoning, so the walks
    charge old turns' reasoning only on an echo route (0.19.0 charged it everywhere)."""

    rows = _reasoning_session()
    newest = len(rows) - 1
    strict_rule = budgets.walk_rule(rows, ceil=True, charge_all_thinking=False)
    strict, echo = strict_rule.costs(rows), budgets.walk_rule(rows, ceil=True, charge_all_thinking=True).costs(rows)
    assert echo[2] - strict[2] == len("think " * 1_400) // 4  # an old turn's thought: echo route only
    assert strict[newest] == echo[newest] > budgets.message_budget_tokens(rows[newest], charge_stale_thinking=False)
    tools = [i for i, m in enumerate(rows) if m["role"] == "tool"]
    assert [strict[i] for i in tools] == [echo[i] for i in tools]
    for ceil in (True, False):
        for charge_all in (True, False):
            rule = budgets.walk_rule(rows, ceil=ceil, charge_all_thinking=charge_all)
            assert rule.costs(rows) == [rule.cost(rows, i) for i in range(len(rows))]  # one pass or row by row

    def tail_start(rules: str, **route: str) -> int:
        engine = CompressorEngine(hermes_rules=rules, protect_last_n=4)
        engine.update_model("model", 64_000, **route)
        return engine._bounds(rows)[1]

    assert tail_start("newest") < tail_start("newest", base_url="https://api.deepseek.com")  # more tail kept
    assert tail_start("newest", provider="deepseek") == tail_start("0.19.0")
    assert tail_start("0.19.0") == tail_start("0.19.0", provider="deepseek")  # 0.19.0 charged every row
    budget = 10_000
    assert pruning.protected_tail_start(rows, 4, budget, rule=strict_rule) < pruning.protected_tail_start(
        rows, 4, budget
    )


def test_the_budget_estimate_charges_each_thought_once() -> None:
    from contextlab.engines.compressor.budgets import message_budget_tokens

    base = {"role": "assistant", "content": ""}
    both = {**base, "reasoning": "r" * 400, "reasoning_content": "c" * 800}
    assert message_budget_tokens(both) == 10 + 200  # reasoning rides inside reasoning_content
    pad = {**base, "reasoning": "r" * 400, "reasoning_content": " "}
    assert message_budget_tokens(pad) == 10 + 100  # a blank pad carries nothing: reasoning is charged
    details = [{"type": "reasoning.text", "text": "t" * 400, "signature": "s" * 4_000}, "u" * 40]
    assert message_budget_tokens({**base, "reasoning_details": details}) == 10 + 110  # text only, never the signature
    assert message_budget_tokens({**base, "reasoning_details": details, "reasoning": "r" * 4}) == 10 + 1
    assert message_budget_tokens({**base, "reasoning_details": details}, charge_stale_thinking=False) == 10
    sidecar = {"role": "user", "content": "short", "api_content": "w" * 400}
    assert message_budget_tokens(sidecar) == 10 + 100  # the text sent, not the display text
