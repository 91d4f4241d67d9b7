"""Sweep speed on the default sweep: 1 worker (in process) vs a pool of N, measured in the same run.

Usage: ``python benchmarks/bench_workers.py [--workers 2] [--quick]``. The workload is what
``contextlab bench`` runs with no arguments: every available engine over the bundled datasets at the
default windows, with the Anthropic cache model. ``--quick`` keeps only ``coding-agent-short`` (for the
test suite). Prints the machine's load, then per engine the requests replayed per second (1 worker),
then per worker count the wall time, runs per second, speed-up against 1 worker and the peak resident
memory of one worker; and checks that the frames are identical (timing columns aside). On a shared
machine the load average says how much of the cores the run really had.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import pandas as pd

from contextlab.bench import bench, collect_transcripts
from contextlab.bench.config import default_config
from contextlab.bench.run import observers_from, settings_from
from contextlab.host.trace import TIMING_COLUMNS


def _untimed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if c in TIMING_COLUMNS])


def _peak_mb(who: int) -> float:
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(who).ru_maxrss * scale / 1e6


def _cpu_s() -> float:
    """CPU seconds used so far by this process and its finished children (the pool's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="coding-agent-short only")
    args = parser.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    config = default_config()
    if args.quick:
        config.transcripts = ["coding-agent-short"]
    transcripts = collect_transcripts(config.transcripts)
    settings, observers = settings_from(config), observers_from(config)
    load_before = os.getloadavg()[0]
    rows, per_engine, reference, baseline = [], None, None, 0.0
    cells: pd.Series | None = None
    for workers in (1, args.workers):
        started, cpu_started = time.perf_counter(), _cpu_s()
        result = bench(
            transcripts, config.engines, config.grid, settings=settings, observers=observers, workers=workers
        )
        wall, cpu = time.perf_counter() - started, _cpu_s() - cpu_started
        assert (result.summaries["status"] == "ok").all(), result.failed[["engine", "error"]]
        baseline = baseline or wall
        if reference is None:
            reference = result
            per_engine = result.summaries.groupby("engine", sort=False).agg(
                runs=("engine", "size"), requests=("requests", "sum"), wall_s=("wall_s", "sum")
            )
            per_engine["requests_per_s"] = (per_engine["requests"] / per_engine["wall_s"]).round(1)
            per_engine["wall_s"] = per_engine["wall_s"].round(2)
            peak = _peak_mb(resource.RUSAGE_SELF)
            cells = result.summaries["wall_s"]
        else:
            pd.testing.assert_frame_equal(_untimed(reference.trace), _untimed(result.trace))
            pd.testing.assert_frame_equal(_untimed(reference.summaries), _untimed(result.summaries))
            peak = _peak_mb(resource.RUSAGE_CHILDREN)  # the largest worker process
        runs = len(result.summaries)
        rows.append(
            {
                "workers": workers,
                "runs": runs,
                "requests": len(result.trace),
                "wall_s": round(wall, 1),
                # what the run would take with its cores to itself (a loaded machine inflates wall_s)
                "cpu_s": round(cpu, 2),
                "runs_per_s": round(runs / wall, 2),
                "speedup_vs_1": round(baseline / wall, 2),
                "peak_mb_per_worker": round(peak),
            }
        )
    print(
        f"cpus: {os.cpu_count()}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"{len(transcripts)} transcripts x {len(config.engines)} engines x {config.grid}"
    )
    print("frames identical across worker counts: yes")
    if cells is not None:
        # The bound a perfect schedule meets with N idle cores: the longest cell, or the total spread
        # evenly. It comes from one run's own cell times, so it does not depend on the machine's load.
        total, longest = float(cells.sum()), float(cells.max())
        bound = max(longest, total / args.workers)
        print(
            f"cells on 1 worker: total {total:.1f} s, longest {longest:.1f} s; critical-path bound for "
            f"{args.workers} workers {bound:.1f} s, i.e. at most {total / bound:.2f}x; "
            f"pool overhead: {rows[-1]['cpu_s'] - rows[0]['cpu_s']:+.1f} CPU-s over 1 worker"
        )
        # On idle cores the pool takes at least its CPU time spread over the workers, and at least its
        # longest cell (scaled from wall to CPU with the 1-worker run's own ratio).
        cpu_1, cpu_n = rows[0]["cpu_s"], rows[-1]["cpu_s"]
        longest_cpu = longest * cpu_1 / max(total, 1e-9)
        print(
            f"expected on {args.workers} idle cores (from CPU time, load-independent): "
            f"{cpu_1 / max(cpu_n / args.workers, longest_cpu):.2f}x"
        )
    print(per_engine.to_string() if per_engine is not None else "")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
