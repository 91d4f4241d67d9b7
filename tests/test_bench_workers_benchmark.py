"""``benchmarks/bench_workers.py`` runs end to end on the quick workload (timings reported, never asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_bench_workers_script_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_workers.py"), "--quick"],
        cwd=REPO,
        env={**os.environ, "TQDM_DISABLE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "frames identical across worker counts: yes" in done.stdout
    for column in ("requests_per_s", "speedup_vs_1", "peak_mb_per_worker"):
        assert column in done.stdout
