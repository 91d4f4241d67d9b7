"""How much the measurement probe adds to ``contextlab replay`` as a user runs it (issue 13 item 9).

``probe_overhead.py`` times the replay call alone, in a child forked from a warm parent: the
strictest share. This times the whole command, each run a new process: start-up and imports,
reading and parsing the file, the replay, and the summary printed; ``--no-probes`` is the baseline,
measured in the same run, alternating with the probed runs. CPU time (user + system) of each child,
best of N. Cells:

* *first sight*: the probe's target store is a new, empty folder (a file never replayed before:
  its targets are extracted, then stored);
* *stored*: the store holds the file's targets from an earlier run (the same file replayed again,
  or a sweep's workers after the first).

The files are the bundled ``coding-agent`` session (``x1``) and the same session N times in a row
(``xN``, as in ``probe_overhead.py``), each written to a temporary native file, so the per-request
cost shows apart from the start-up cost every run pays; or, with ``--transcript``, recorded sessions
as they are on disk.

    python benchmarks/probe_overhead_cli.py [--repeat 3] [--times 2,4] [--engines passthrough,compressor|all]
    python benchmarks/probe_overhead_cli.py --context-length 32000 --transcript SESSION.jsonl [--transcript ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from arguments import at_least_one, engine_names, recorded_sessions, whole_numbers
from probe_overhead import repeated

from contextlab import load_dataset
from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE
from contextlab.transcripts.native import dump


def child_cpu(command: list[str], store: str) -> float:
    """CPU seconds (user + system) of one run of ``command`` with the target store at ``store``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env={**os.environ, TARGET_STORE: store}, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"probe_overhead_cli: {' '.join(command[2:])} failed: {tail}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(path: Path, engine: str, repeat: int, scratch: Path, context_length: int) -> tuple[float, float, float]:
    """Best-of-``repeat`` CPU seconds of the plain run, and the first-sight and stored ratios."""
    command = [sys.executable, "-m", "contextlab.cli", "replay", str(path), "--engine", engine]
    command += ["--context-length", str(context_length), "--json", "--no-timing"]
    stored = str(scratch / f"stored-{engine}-{path.stem}")
    child_cpu(command, stored)  # fills the store the stored runs read
    plain, first, again = [], [], []
    for k in range(repeat):
        plain.append(child_cpu([*command, "--no-probes"], str(scratch / f"plain-{k}")))
        fresh = scratch / f"fresh-{engine}-{path.stem}-{k}"
        first.append(child_cpu(command, str(fresh)))
        shutil.rmtree(fresh, ignore_errors=True)
        again.append(child_cpu(command, stored))
    base = min(plain)
    return base, min(first) / base, min(again) / base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least_one, default=3)
    parser.add_argument("--times", default="2,4", help="also replay the session this many times in a row")
    parser.add_argument(
        "--engines", default="passthrough,compressor", help="comma-separated; all: every shipped engine"
    )
    parser.add_argument(
        "--transcript", action="append", default=[], help="a recorded session to run instead (repeatable)"
    )
    parser.add_argument("--context-length", type=at_least_one, default=128_000)
    args = parser.parse_args()
    engines = engine_names(parser, args.engines)
    times = sorted(set(whole_numbers(parser, "--times", args.times)) - {1})  # x1 is always replayed
    sessions = recorded_sessions(parser, args.transcript)
    recorded = [(Path(p), t.n_requests) for p, t in zip(args.transcript, sessions, strict=True)]
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    print(f"{'file':<20} {'engine':<16} {'requests':>8} {'no probe':>9} {'first sight':>12} {'stored':>7}")
    with tempfile.TemporaryDirectory(prefix="probe-overhead-cli-") as folder:
        scratch = Path(folder)
        files = recorded or generated(scratch, times)
        for path, requests in files:
            for engine in engines:
                plain, first, stored = measure(path, engine, args.repeat, scratch, args.context_length)
                print(f"{path.stem[:20]:<20} {engine:<16} {requests:>8} {plain:>8.2f}s {first:>12.2f} {stored:>7.2f}")


def generated(scratch: Path, times: list[int]) -> list[tuple[Path, int]]:
    """The bundled session once and each of ``times`` times in a row, written to native files in
    ``scratch``, with their request counts."""
    base = load_dataset("coding-agent")
    files = []
    for n in [1, *times]:
        path = scratch / f"coding-agent-x{n}.jsonl"
        copy = repeated(base, n) if n > 1 else base
        dump(copy, path)
        files.append((path, copy.n_requests))
    return files


if __name__ == "__main__":
    main()
