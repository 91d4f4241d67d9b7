"""The engines replay benchmark (the evidence table) runs and reports every engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_engines_replay_benchmark_runs(repo: Path, shared_transcripts: Path) -> None:
    path = shared_transcripts / "claude-code" / "tool_heavy.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            str(repo / "benchmarks" / "engines_replay.py"),
            str(path),
            "--context-length",
            "4000",
            "--overhead",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:] if line.strip()]
    names = {row[0] for row in rows}
    assert {"passthrough", "mask_window", "clear_tool_uses", "summary", "hybrid", "lcm", "retrieval"} <= names
    assert len(rows) == 10 and all("ok" in row for row in rows), done.stdout
    assert "wall_x_passthrough" in done.stdout
