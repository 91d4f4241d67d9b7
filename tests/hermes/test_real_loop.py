"""The real Hermes loop and contextlab's host send the same requests.

``real_loop.py`` drives the real 0.19.0 ``AIAgent.run_conversation`` over a recording through a local
server that answers with the recorded assistant messages and tools that return the recorded outputs;
contextlab replays the same file. Every request the real loop sent must be contextlab's request of
the same index, row for row after the system prompt (the real host writes its own: its identity,
then the recording's prompt, then the date and model), key for key (``docs/host-loop.md`` §Tool
results, *The real loop*).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from contextlab import HostSettings, load_dataset, load_transcript, replay, save_transcript
from contextlab.transcripts.model import Transcript
from tests.hermes.conftest import REPO
from tests.hermes.real_loop import loop_ready, loop_shaped
from tests.request_log import Requests


def real_requests(
    hermes_python: Path, path: Path, window: int, workdir: Path, limit: int | None = None
) -> list[list[dict[str, Any]]]:
    return [request["messages"] for request in real_run(hermes_python, path, window, workdir, limit)["requests"]]


def real_run(hermes_python: Path, path: Path, window: int, workdir: Path, limit: int | None = None) -> dict[str, Any]:
    """What ``real_loop.py`` printed: the requests (bodies) and the compaction count at each."""
    extra = [] if limit is None else [str(limit)]
    done = subprocess.run(
        [str(hermes_python), str(REPO / "tests" / "hermes" / "real_loop.py"), str(path), str(window), *extra],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["window"] == window
    return found


def our_requests(path: Path, window: int) -> list[list[dict[str, Any]]]:
    requests = Requests()
    replay(load_transcript(path), "compressor", context_length=window, observers=[requests], probes=False)
    return requests.sent


def preview(content: Any) -> Any:
    """A spilled output as its preview: 0.19.0 without a sandbox truncates it inline, newer hosts (and
    contextlab) write a ``<persisted-output>`` block around the same preview."""
    if not isinstance(content, str):
        return content
    if content.startswith("<persisted-output>") and "chars):\n" in content:  # not a recorded tool's own
        kept = content.split("chars):\n", 1)[1].removesuffix("\n</persisted-output>")
        return kept.removesuffix("\n...")
    if "\n\n[Truncated: tool response was " in content:
        return content.split("\n\n[Truncated: tool response was ", 1)[0]
    return content


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: preview(v) if k == "content" else v for k, v in row.items()} for row in rows[1:]]


def aligned(transcript: Transcript) -> int:
    """How many requests the real loop sends as the recording did: up to the first reply it would
    follow differently (a text reply the recorded turn goes on after ends the loop's turn; a call
    whose results a user row follows gets another request from the loop)."""
    requests, last = 0, None
    for message in transcript.messages:
        if message["role"] == "user":
            if last == "calls":
                return requests
            last = None
        elif message["role"] == "assistant":
            if last == "text":
                return requests
            requests += 1
            last = "calls" if message.get("tool_calls") else "text"
    return requests


@pytest.mark.parametrize(
    ("dataset", "expected"), [("coding-agent-short", 17), ("support-agent", 36), ("coding-agent", 34)]
)
def test_the_real_loop_sends_what_contextlab_sends(
    hermes_python: Path, tmp_path: Path, dataset: str, expected: int
) -> None:
    path = REPO / "datasets" / f"{dataset}.jsonl.gz"
    count = aligned(load_transcript(path))
    assert count == expected  # each dataset's first departure from the loop's shape
    theirs = real_requests(hermes_python, path, 128_000, tmp_path, limit=count)
    ours = our_requests(path, 128_000)
    assert len(theirs) == count
    for index, (real, simulated) in enumerate(zip(theirs, ours, strict=False)):
        assert comparable(real) == comparable(simulated), f"{dataset}: request {index}"


def test_the_real_loop_spills_what_contextlab_spills(hermes_python: Path, tmp_path: Path) -> None:
    """An 80,000-character output at a 64K window (the smallest the host accepts): over 15% of it."""
    lines = "".join(f"build line {i:05d} ok\n" for i in range(4_000))
    call = {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "make"}'}}
    tool = {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
    messages = [
        {"role": "user", "content": "run the build"},
        {"role": "assistant", "content": "Running it.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": lines},
        {"role": "assistant", "content": "The build passed."},
    ]
    path = tmp_path / "spill.jsonl"
    save_transcript(Transcript("spill", messages, "You run builds.", [tool]), path)
    theirs = real_requests(hermes_python, path, 64_000, tmp_path)
    ours = our_requests(path, 64_000)
    assert len(theirs) == len(ours) == 2
    assert comparable(theirs[1]) == comparable(ours[1])
    spilled = ours[1][-1]["content"]
    assert spilled.startswith("<persisted-output>") and len(spilled) < 2_500 and len(theirs[1][-1]["content"]) < 2_500


CLAUDE_CODE_SESSION = "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
SECOND_CLAUDE_CODE_SESSION = "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
THIRD_CLAUDE_CODE_SESSION = "claude-code/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


@pytest.mark.parametrize(
    ("dataset", "window", "at_least"),
    [("support-agent", 64_000, 40), ("coding-agent", 128_000, 60), (CLAUDE_CODE_SESSION, 64_000, 90)],
)
def test_whole_sessions_match_the_real_loop_until_its_first_compaction(
    hermes_python: Path, shared_transcripts: Path, tmp_path: Path, dataset: str, window: int, at_least: int
) -> None:
    """A dataset made to follow the loop's turn shape (``real_loop.loop_shaped``) replays whole in the
    real loop, with a session store, exact usage and the real compressor. contextlab, given the real
    host's system prompt and tool list, sends the same requests up to the real loop's first
    compaction: there 0.19.0's gates measure the plain rough estimate of the request, where contextlab
    follows newer upstream's usage-anchored pressure and compacts later (``docs/host-loop.md`` §Tool
    results, *Whole sessions*). Where that compaction falls depends on the real host's system prompt
    (about 47, 69 and 102 requests here); ``at_least`` keeps the comparison long. A Claude Code session
    gets schemas for the tools it calls and its text-part outputs as text (``real_loop.loop_ready``).
    On ``coding-agent`` the stretch includes a re-read the host's tool-loop warning marks; the stall
    guards, newer than 0.19.0, are off."""
    recorded = load_transcript(shared_transcripts / dataset) if "/" in dataset else load_dataset(dataset)
    path = tmp_path / "loop.jsonl"
    save_transcript(loop_shaped(loop_ready(recorded)), path)
    found = real_run(hermes_python, path, window, tmp_path, limit=120)
    first = found["compactions"].index(1)  # the first request sent after the real loop's first compaction
    assert first >= at_least
    theirs = [request["messages"] for request in found["requests"][:first]]
    head = found["requests"][0]
    system, tools = head["messages"][0]["content"], head.get("tools")
    settings = HostSettings(context_length=window, system_prompt=system, tools=tools, stall_guards=False)
    requests = Requests()
    replay(load_transcript(path), "compressor", settings, observers=[requests], probes=False)
    for index, real in enumerate(theirs):
        ours = requests.sent[index]
        assert real[0] == ours[0] and comparable(real) == comparable(ours), f"{dataset}: request {index}"
    warned = [i for i, rows in enumerate(theirs) if any("[Tool loop warning:" in str(r.get("content")) for r in rows)]
    assert bool(warned) == (dataset == "coding-agent")


@pytest.mark.parametrize(
    ("dataset", "window", "compactions"),
    [
        ("support-agent", 64_000, 8),
        ("coding-agent", 128_000, 13),
        (SECOND_CLAUDE_CODE_SESSION, 64_000, 4),
        (THIRD_CLAUDE_CODE_SESSION, 64_000, 4),
    ],
)
def test_whole_sessions_match_the_real_0_19_0_loop(
    hermes_python: Path, shared_transcripts: Path, tmp_path: Path, dataset: str, window: int, compactions: int
) -> None:
    """With ``hermes_version="0.19.0"`` contextlab follows that release's host (its rough-estimate
    gates, its session store's stamps, its rows without uids, its inline truncation without a sandbox)
    and the compressor its rules: every request of the whole session equals the real loop's, through
    every compaction (``docs/host-loop.md`` §Host versions). The Claude Code sessions carry thinking,
    which the harness's provider returns as a thinking model's does; the third lists some results out
    of call order, which the host appends in call order."""
    recorded = load_transcript(shared_transcripts / dataset) if "/" in dataset else load_dataset(dataset)
    path = tmp_path / "loop.jsonl"
    save_transcript(loop_shaped(loop_ready(recorded)), path)
    found = real_run(hermes_python, path, window, tmp_path)
    head = found["requests"][0]
    settings = HostSettings(
        context_length=window,
        system_prompt=head["messages"][0]["content"],
        tools=head.get("tools"),
        hermes_version="0.19.0",
    )
    requests = Requests()
    result = replay(load_transcript(path), "compressor", settings, observers=[requests], probes=False)
    assert found["compactions"][-1] == int(result.summary["compactions"]) == compactions
    assert len(requests.sent) == len(found["requests"])
    for index, real in enumerate(found["requests"]):
        ours = requests.sent[index]
        assert real["messages"][0] == ours[0] and comparable(real["messages"]) == comparable(ours), (
            f"{dataset}: request {index}"
        )
