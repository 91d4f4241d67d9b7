"""Start-up time: what a plugin inside the host and a user typing ``contextlab --help`` wait for.

Usage: python benchmarks/startup.py [--repeat N]

Each case runs in a fresh interpreter (wall time of the whole process, best and median of N), next
to the baseline ``python -c pass`` measured in the same run; the ratio is the case over the
baseline. The target (issue 15) is under 0.5 s for ``import contextlab.engines.parts`` and
``contextlab --help``. On a shared, loaded machine absolute times are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES: dict[str, list[str]] = {
    "python -c pass (baseline)": ["-c", "pass"],
    "import contextlab.engines.parts": ["-c", "import contextlab.engines.parts"],
    "import contextlab": ["-c", "import contextlab"],
    "contextlab --version": ["-m", "contextlab.cli", "--version"],
    "contextlab --help": ["-m", "contextlab.cli", "--help"],
    "import contextlab.api (full replay stack)": ["-c", "import contextlab.api"],
}
TARGET_S = 0.5
TARGETED = ("import contextlab.engines.parts", "contextlab --help", "contextlab --version")


def wall_times(args: list[str], repeat: int) -> list[float]:
    """Wall seconds of ``python ARGS`` per run."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per case (default 7)")
    args = parser.parse_args()
    # Interleave the cases round by round so a burst of load hits all of them alike.
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.repeat):
        for name, case in CASES.items():
            samples[name].extend(wall_times(case, 1))
    base = min(samples["python -c pass (baseline)"])
    print(f"{'case':<44} {'best s':>8} {'median s':>9} {'x pass':>7}  target {TARGET_S} s")
    for name, times in samples.items():
        best, median = min(times), statistics.median(times)
        verdict = ("ok" if median < TARGET_S else "OVER") if name in TARGETED else ""
        print(f"{name:<44} {best:>8.3f} {median:>9.3f} {best / base:>7.1f}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
