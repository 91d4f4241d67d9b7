"""The host's tool-loop guardrails (``contextlab/host/tool_guard.py``; docs/host-loop.md
§Tool-loop guardrails). The warnings are held to the real 0.19.0 controller in
``tests/hermes/test_real_host.py``; the newer rules (stubs, notices, cycles, progress) are here."""

from __future__ import annotations

import json
from typing import Any

from contextlab import HostSettings, replay
from contextlab.engine import Message
from contextlab.host.tool_guard import STUB_MIN_CHARS, ToolLoopGuard, tool_failed
from contextlab.transcripts import Transcript
from tests.request_log import Requests

BODY = "line of a file\n" * 60  # over the stub minimum
SENT = BODY.strip()  # as a request carries it (string content is sent stripped)


def test_a_second_identical_call_gets_a_stub_pointing_at_the_first() -> None:
    guard = ToolLoopGuard()
    assert guard.observe("read_file", {"path": "a.py"}, BODY, "c1") is BODY
    second = guard.observe("read_file", {"path": "a.py"}, BODY, "c2")
    assert second.startswith("[hermes note: this result is byte-identical to the read_file result earlier this turn")
    assert "(tool_call_id c1)" in second and 'Args: {"path":"a.py"}' in second
    assert second.endswith(
        "count=2; read_file returned the same result 2 times. Use the result already provided "
        "or change the query instead of repeating it unchanged.]"
    )
    assert guard.fired == 1


def test_short_or_failed_repeats_keep_their_output() -> None:
    guard = ToolLoopGuard()
    short = "x" * (STUB_MIN_CHARS - 1)
    guard.observe("lookup", {}, short, "c1")
    assert guard.observe("lookup", {}, short, "c2") is short  # not read-only, too short: unchanged
    failing = "Error: " + "x" * STUB_MIN_CHARS
    guard.observe("lookup", {"q": 1}, failing, "c3")
    again = guard.observe("lookup", {"q": 1}, failing, "c4")
    assert again.startswith(failing) and "repeated_exact_failure_warning; count=2" in again  # no stub


def test_the_third_identical_call_gets_a_notice_and_pollers_do_not() -> None:
    guard = ToolLoopGuard()
    outputs = [guard.observe("lookup", {"id": 7}, "same", f"c{k}") for k in range(4)]
    assert outputs[:2] == ["same", "same"]
    assert outputs[2] == (
        "same\n\n[hermes note: this is the 3rd consecutive identical call to lookup with identical arguments "
        "returning the same result. Do not repeat it — change arguments, use a different tool, or proceed with "
        "what you have.]"
    )
    assert "4th consecutive" in outputs[3]
    poller = ToolLoopGuard()
    assert [poller.observe("job_poll", {}, "running", f"p{k}") for k in range(4)] == ["running"] * 4


def test_a_repeated_cycle_gets_a_notice() -> None:
    guard = ToolLoopGuard()
    seen = [guard.observe(name, {}, f"out {name}", f"c{k}") for k, name in enumerate(["a", "b"] * 3)]
    assert seen[:5] == [f"out {n}" for n in ["a", "b", "a", "b", "a"]]
    assert seen[5].endswith(
        "[hermes note: the last 3 rounds repeated the same cycle of 2 tool calls (ending with b) with identical "
        "arguments and identical results. Do not repeat the batch — change arguments, use a different tool, or "
        "proceed with what you have.]"
    )


def test_a_write_that_landed_makes_the_next_failure_a_new_attempt() -> None:
    def second_failure(between: list[tuple[str, str]]) -> str:
        guard = ToolLoopGuard()
        guard.observe("read_file", {"path": "a.py"}, "Error: no such file", "c1")
        for k, (name, out) in enumerate(between):
            guard.observe(name, {"path": "a.py"}, out, f"w{k}")
        return str(guard.observe("read_file", {"path": "a.py"}, "Error: no such file", "c2"))

    assert "repeated_exact_failure_warning; count=2" in second_failure([])
    assert second_failure([("write_file", '{"bytes_written": 12}')]) == "Error: no such file"


def test_what_counts_as_a_failure() -> None:
    assert tool_failed("terminal", '{"exit_code": 1, "output": ""}')
    assert not tool_failed("terminal", "Error: but terminal only reads its exit code")
    assert not tool_failed("write_file", '{"bytes_written": 3, "note": "\\"error\\" in text"}')
    assert tool_failed("web_search", '{"success": false, "message": "rate limited"}')
    assert tool_failed("lookup", "Error: nope") and not tool_failed("lookup", "fine")


def _rereads(turns: int) -> Transcript:
    """The agent reads one file twice in each turn, then answers."""
    messages: list[Message] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"check the file ({t})"})
        for k in range(2):
            call_id = f"call_{t}_{k}"
            arguments = json.dumps({"path": "src/app.py"})
            call = {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": arguments}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": BODY})
        messages.append({"role": "assistant", "content": "It is unchanged."})
    tool = {"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {}}}
    return Transcript("rereads", messages, "You read files.", [tool])


def _tool_rows(settings: HostSettings) -> tuple[list[Any], Any]:
    requests = Requests()
    result = replay(_rereads(2), "passthrough", settings, observers=[requests], probes=False)
    return [m["content"] for m in requests.sent[-1] if m["role"] == "tool"], result


def test_a_replay_stubs_a_reread_within_a_turn_and_counts_it() -> None:
    rows, result = _tool_rows(HostSettings(context_length=64_000))
    assert [row == SENT for row in rows] == [True, False, True, False]  # the count starts again each turn
    assert rows[1].startswith("[hermes note: this result is byte-identical") and "(tool_call_id call_0_0)" in rows[1]
    assert result.trace["tool_loop_notes"].tolist() == [0, 1, 0, 0, 1, 0]
    assert result.summary["tool_loop_notes"] == 2


def test_the_guardrails_can_be_turned_off_and_recorded_rows_are_left_alone() -> None:
    off, result = _tool_rows(HostSettings(context_length=64_000, tool_loop_warnings=False, stall_guards=False))
    recorded, _ = _tool_rows(HostSettings(context_length=64_000, tool_results="recorded"))
    assert off == recorded == [SENT] * 4
    assert result.summary["tool_loop_notes"] == 0
    warnings_only, _ = _tool_rows(HostSettings(context_length=64_000, stall_guards=False))
    assert warnings_only[1] == BODY + (
        "\n\n[Tool loop warning: idempotent_no_progress_warning; count=2; read_file returned the same result 2 "
        "times. Use the result already provided or change the query instead of repeating it unchanged.]"
    )  # the output whole: its closing line break stays inside the sent text (only the ends are stripped)
