"""Sweep speed: ``bench`` with 1 worker (in process) vs a process pool, measured in the same run.

Usage: ``python benchmarks/bench_workers.py [--transcripts N] [--workers 2]``. Needs the tau-bench
recordings (``$CONTEXTLAB_TRANSCRIPTS`` or ``../shared/transcripts``). Prints one row per setting
with wall time, runs per second and the speed-up against the 1-worker baseline, and checks that
the frames are identical (timing columns aside). A last row is the ceiling on this machine right now:
the same work split over independent processes with no pool and no results sent back. On a shared
machine that row shows how much parallel capacity there really was.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

import pandas as pd

from contextlab.bench import bench
from contextlab.examples import RecentTurnsEngine, example_transcripts
from contextlab.host.trace import TIMING_COLUMNS


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS or c == "engine_ms_total"])


def _half(limit: int, part: int, parts: int) -> None:
    transcripts = example_transcripts(limit=limit, longest=False)[part::parts]
    bench(transcripts, ENGINES, GRID, workers=1, progress=False)


GRID = {"threshold_percent": [0.5, 0.75], "context_length": [8_000, 32_000]}
ENGINES = ["passthrough", RecentTurnsEngine]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    transcripts = example_transcripts(limit=args.transcripts, longest=False)
    grid, engines = GRID, ENGINES
    runs = len(transcripts) * len(engines) * 4
    rows, baseline, reference = [], 0.0, None
    for workers in (1, args.workers):
        started = time.perf_counter()
        result = bench(transcripts, engines, grid, workers=workers, progress=False)
        wall = time.perf_counter() - started
        baseline = baseline or wall
        if reference is None:
            reference = result
        else:
            pd.testing.assert_frame_equal(_untimed(reference.trace), _untimed(result.trace))
            pd.testing.assert_frame_equal(_untimed(reference.summaries), _untimed(result.summaries))
        rows.append(
            {
                "workers": workers,
                "runs": runs,
                "requests": len(result.trace),
                "wall_s": round(wall, 2),
                "runs_per_s": round(runs / wall, 1),
                "speedup_vs_1": round(baseline / wall, 2),
            }
        )
    context = multiprocessing.get_context("spawn")
    started = time.perf_counter()
    procs = [context.Process(target=_half, args=(args.transcripts, i, args.workers)) for i in range(args.workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    wall = time.perf_counter() - started
    rows.append(
        {
            "workers": f"{args.workers} independent",
            "runs": runs,
            "requests": len(reference.trace),
            "wall_s": round(wall, 2),
            "runs_per_s": round(runs / wall, 1),
            "speedup_vs_1": round(baseline / wall, 2),
        }
    )
    print(f"cpus: {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}; frames identical across worker counts: yes")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
