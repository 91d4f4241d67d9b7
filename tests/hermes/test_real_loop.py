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

from contextlab import load_transcript, replay, save_transcript
from contextlab.transcripts.model import Transcript
from tests.hermes.conftest import REPO
from tests.request_log import Requests


def real_requests(hermes_python: Path, path: Path, window: int, workdir: Path) -> list[list[dict[str, Any]]]:
    done = subprocess.run(
        [str(hermes_python), str(REPO / "tests" / "hermes" / "real_loop.py"), str(path), str(window)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["window"] == window
    return [request["messages"] for request in found["requests"]]


def our_requests(path: Path, window: int) -> list[list[dict[str, Any]]]:
    requests = Requests()
    replay(load_transcript(path), "compressor", context_length=window, observers=[requests], probes=False)
    return requests.sent


def preview(content: Any) -> Any:
    """A spilled output as its preview: 0.19.0 without a sandbox truncates it inline, newer hosts (and
    contextlab) write a ``<persisted-output>`` block around the same preview."""
    if not isinstance(content, str):
        return content
    if content.startswith("<persisted-output>"):
        kept = content.split("chars):\n", 1)[1].removesuffix("\n</persisted-output>")
        return kept.removesuffix("\n...")
    if "\n\n[Truncated: tool response was " in content:
        return content.split("\n\n[Truncated: tool response was ", 1)[0]
    return content


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: preview(v) if k == "content" else v for k, v in row.items()} for row in rows[1:]]


def test_the_real_loop_sends_what_contextlab_sends_on_a_coding_session(hermes_python: Path, tmp_path: Path) -> None:
    path = REPO / "datasets" / "coding-agent-short.jsonl.gz"
    theirs = real_requests(hermes_python, path, 128_000, tmp_path)
    ours = our_requests(path, 128_000)
    # The recording's last turn goes on after a text reply (a plan, then its first call): the real
    # loop ends the turn there, so it sends 17 of the recording's 21 requests.
    assert len(theirs) == 17 and len(ours) == 21
    for index, (real, simulated) in enumerate(zip(theirs, ours, strict=False)):
        assert comparable(real) == comparable(simulated), f"request {index}"
    # The tool rows carry the tool's name, as the host writes them.
    assert sum(row.get("name") == "search_files" for row in ours[1]) == 1


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
