"""The benchmark scripts run end to end (smoke tests: their timings are reported, never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("script", "args", "expect"),
    [
        (
            "replay_speed.py",
            ["datasets/coding-agent-short.jsonl.gz", "--repeat", "1", "--no-sessions"],
            "tokenize-once s",
        ),
    ],
)
def test_benchmark_script_runs(script: str, args: list[str], expect: str) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert expect in done.stdout
