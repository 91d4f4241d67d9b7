"""Phase 1 tool-output pruning passes (host-contract.md §2d step 2) and prune_tool_results_only."""

from __future__ import annotations

import json

from builders import call, conversation

from contextlab.engines.compressor import CompressorEngine
from contextlab.engines.compressor import pruning as p


def tool_msg(call_id: str, content: object) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def test_protected_tail_by_tokens_with_a_floor() -> None:
    messages = [{"role": "user", "content": "x" * 4000} for _ in range(20)]  # 1,010 budget tokens each
    assert p.protected_tail_start(messages, 20, 3_000) == 12  # floor min(20, 20, 8) = 8 messages
    small = [{"role": "user", "content": "x"} for _ in range(20)]
    assert p.protected_tail_start(small, 20, 3_000) == 0  # everything fits
    assert p.protected_tail_start(messages, 5, None) == 15  # count-based when no token budget


def test_pass1_dedupes_identical_results_anywhere_keeping_newest() -> None:
    body = "same output " * 30
    messages = [tool_msg("a", body), tool_msg("b", "short"), tool_msg("c", body), tool_msg("d", body)]
    work = list(messages)
    assert p.dedupe_tool_results(work) == 2
    assert [m["content"] for m in work] == [p.DUPLICATE_PLACEHOLDER, "short", p.DUPLICATE_PLACEHOLDER, body]
    assert messages[0]["content"] == body  # the input dicts are untouched
    short = [tool_msg("a", "tiny"), tool_msg("b", "tiny")]
    assert p.dedupe_tool_results(short) == 0  # under 200 chars


def test_pass2_one_line_summaries_outside_the_tail() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call("t1", "terminal", command="make test")]},
        tool_msg("t1", "ok\n" * 100 + "exit code 2"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("r1", "read_file", path="a.py", offset=10)],
        },
        tool_msg("r1", "y" * 300),
        {"role": "assistant", "content": None, "tool_calls": [call("g1", "grep", pattern="foo", path="src")]},
        tool_msg("g1", "z" * 300),
        tool_msg("g1", "w" * 100),
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]},
    ]
    work = list(messages)
    assert p.summarize_old_results(work, len(work), 200) == 3
    # Upstream reads the exit code from a JSON ``"exit_code"`` field only: plain text gives ``?``.
    assert work[1]["content"] == "[terminal] ran `make test` -> exit ?, 101 lines output"
    assert work[3]["content"] == "[read_file] read a.py from line 10 (300 chars)"
    assert work[5]["content"] == "[grep] pattern=foo path=src (300 chars result)"
    assert work[6]["content"] == "w" * 100  # short results stay
    protected = list(messages)
    assert p.summarize_old_results(protected, 2, 200) == 1  # only before the protected boundary


def test_pass2_screenshots() -> None:
    shot = tool_msg("s", [{"type": "text", "text": "page"}, {"type": "image_url", "image_url": {"url": "data:"}}])
    work = [shot]
    p.summarize_old_results(work, 1, 200)
    assert work[0]["content"] == [
        {"type": "text", "text": "page"},
        {"type": "text", "text": p.SCREENSHOT_PLACEHOLDER},
    ]


def test_pass3_truncates_long_argument_leaves() -> None:
    long_args = {"path": "a.py", "content": "x" * 600, "nested": {"items": ["y" * 250, "short"]}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call("w", "write_file", **long_args)]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "v", "function": {"name": "f", "arguments": "{" + "x" * 600}}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("s", "write_file", path="b.py", content="z" * 300)],
        },
    ]
    work = list(messages)
    assert p.truncate_call_arguments(work, 3) == 1
    args = json.loads(work[0]["tool_calls"][0]["function"]["arguments"])
    assert args["content"] == "x" * 200 + "...[truncated]"
    # Every leaf over 200 chars is cut, even one barely over (upstream ``_truncate_tool_call_args_json``).
    assert args["nested"]["items"] == ["y" * 200 + "...[truncated]", "short"]
    assert work[1] is messages[1]  # invalid JSON left alone
    assert work[2] is messages[2]  # JSON under 500 chars left alone


def test_pass4_pressure_demotion_keeps_last_three_verbatim() -> None:
    messages: list[dict[str, object]] = []
    for i in range(6):
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{i}", "read_file", path=f"f{i}")]}
        )
        messages.append(tool_msg(f"c{i}", "q" * 4000))
    work = list(messages)
    changed = p.demote_under_pressure(work, 0, 1_000)  # 6 × ~1,000 tokens > 1.5 × 1,000
    # Oldest first outside the last 3 messages (4 results), then the last resort reaches one more.
    assert changed == 5
    assert [str(m["content"])[:16] for m in work[1::2]] == ["[read_file] read"] * 5 + ["q" * 16]
    # Not over 1.5 × budget: nothing demoted.
    assert p.demote_under_pressure(list(messages), 10, 1_000) == 0


def test_pass4_last_resort_demotes_newest_tool_body() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "read_file", path="small")]},
        tool_msg("a", "s" * 300),
        {"role": "assistant", "content": None, "tool_calls": [call("c", "read_file", path="big")]},
        tool_msg("c", "q" * 40_000),
        {"role": "user", "content": "next"},
    ]
    work = list(messages)
    assert p.demote_under_pressure(work, 0, 1_000) == 2
    assert work[4]["content"].startswith("[read_file] read big")
    # Two rows only: no row outside the three kept verbatim, so upstream's pass does not start.
    assert p.demote_under_pressure(list(messages[3:5]), 0, 1_000) == 0


def test_platform_echoes_removed_after_latest_ask() -> None:
    messages = [
        {"role": "user", "content": "do it"},
        {"role": "user", "content": "  "},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "ok"},
    ]
    assert p.remove_platform_echoes(messages, 0) == [messages[0], messages[3]]


def engine(**kwargs: object) -> CompressorEngine:
    e = CompressorEngine(**kwargs)  # type: ignore[arg-type]
    e.update_model("gpt-4o", 200_000)
    return e


def test_prune_tool_results_only_gate_and_reclaim_minimum() -> None:
    history = conversation(40, 9_000)  # results of 9,000 chars ≥ min_result_chars 8,000
    off = engine()
    assert off.prune_tool_results_only(history, current_tokens=10**6) == (history, 0)  # gate 0: disabled
    on = engine(proactive_prune_tokens=50_000)
    out, n = on.prune_tool_results_only(history, current_tokens=40_000)
    assert out is history and n == 0  # below the gate
    out, n = on.prune_tool_results_only(history, current_tokens=60_000)
    assert out is not history and n == 40 - 5  # the last protect_last_n=20 messages (5 turns) are protected
    assert out[2]["content"].startswith("[read_file] read src/module_0.py")
    assert history[2]["content"].startswith("line 0")  # input untouched
    small = conversation(40, 300)
    picky = engine(proactive_prune_tokens=1, proactive_prune_min_result_chars=10)
    out, n = picky.prune_tool_results_only(small, current_tokens=10)
    assert out is small and n == 0  # would reclaim < 4,096 tokens: no commit
