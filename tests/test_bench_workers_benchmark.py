"""``benchmarks/bench_workers.py`` runs end to end on a few transcripts (timings reported, never asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_bench_workers_script_runs(shared_transcripts: Path) -> None:
    env = {**os.environ, "CONTEXTLAB_TRANSCRIPTS": str(shared_transcripts), "TQDM_DISABLE": "1"}
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_workers.py"), "--transcripts", "4"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "frames identical across worker counts: yes" in done.stdout
    assert "speedup_vs_1" in done.stdout and "2 independent" in done.stdout
