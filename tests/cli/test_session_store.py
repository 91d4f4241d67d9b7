"""``--no-session-store``: the CLI host's session store decides whether a compaction ends the
engine's session (docs/host-loop.md §Sessions), and with it how often the compressor compacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlab.cli import main


def test_without_a_session_store_the_compressor_backs_off_sooner(
    shared_transcripts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Claude Code session at 32K whose compactions barely clear the threshold (the real host's
    # numbers, tests/hermes/test_real_host.py): with the store each commit clears the compressor's
    # ineffective strikes under the 0.19.0 rules, so it keeps compacting; without it the anti-thrash
    # verdict stops it after two strikes.
    session = shared_transcripts / "claude-code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    base = ["replay", str(session), "--engine", "compressor", "--param", "hermes_rules=0.19.0"]
    base += ["--context-length", "32000", "--no-probes", "--json"]
    assert main(base) == 0
    with_store = json.loads(capsys.readouterr().out)
    assert main([*base, "--no-session-store"]) == 0
    without = json.loads(capsys.readouterr().out)
    # 24 and 19 passes, on 23 and 18 requests (one request compacts twice), as the real compressor.
    assert (with_store["compactions"], without["compactions"]) == (24, 19)
    assert with_store["window_note"] and without["window_note"]  # 32K is under the real host's minimum


@pytest.mark.parametrize("switch", ["session_store", "tool_loop_warnings", "stall_guards"])
def test_a_switch_that_is_not_a_boolean_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], switch: str
) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"transcripts: [coding-agent-short]\nengines: [passthrough]\nsettings: {{{switch}: maybe}}\n")
    out = tmp_path / "out"
    assert main(["bench", str(sweep), "--out", str(out), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"contextlab: error: settings: {switch} must be true or false, got 'maybe'"
    ]
    assert not out.exists()
