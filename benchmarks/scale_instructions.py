"""Scale, counted in instructions: the growth check of ``scale.py`` without the machine's noise.

Usage::

    python benchmarks/scale_instructions.py [--sizes 1,8] [--engines passthrough,retrieval]
                                            [--cache PROFILE] [--path FILE] [--jobs 2] [--cache-sim]

On a shared machine the CPU time of one replay moves by a quarter from one run to the next (README,
Performance), as much as the margins ``scale.py`` judges. Valgrind's cachegrind counts the
instructions a process executes, which do not depend on what else the machine runs (with the hash
seed fixed, two runs of one process differed by 0.04-0.13% on ``coding-agent-short``). Each size runs
a process that only loads the session, repeats it and loads the encoding (the base), and one that then
tokenizes every distinct text once (the floor); each cell runs one that replays instead, and each
engine and cache one that replays the first request only (its setup: imports, the first request,
the frames). The floor's own count is its count less its size's base, the replay's its count less
its size's base and the setup's own count over the 1x base (about 0.2-0.3 G instructions). The
table gives each cell's instructions per instruction of the floor and, as ``scale.py`` does with CPU
time, its growth over the 1x value (target: at most 1.5).

Instructions are not time: a replay whose working set outgrows the caches spends more time per
instruction as the session grows, so a growth near the target here leaves less margin in CPU time.
``--cache-sim`` has cachegrind simulate this machine's caches and adds the first-level and
last-level cache misses per thousand instructions (about twice as slow). A 1x replay of ``coding-agent``
takes a minute or two under cachegrind, an 8x one 10-20 minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arguments import whole_numbers

from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE

# Timed as a first sight: a transcript's probe targets are extracted, not read back from the on-disk
# target store (which a rerun would otherwise find filled); set the variable to time the store.
os.environ.setdefault(TARGET_STORE, "off")

REPO = Path(__file__).resolve().parent.parent
LIMIT = 1.5
_COUNTS = {
    "instructions": re.compile(r"I\s+refs:\s+([\d,]+)"),
    "d1_misses": re.compile(r"D1\s+misses:\s+([\d,]+)"),
    "ll_misses": re.compile(r"LL misses:\s+([\d,]+)"),
}


@dataclass(frozen=True)
class Job:
    """One process to count: ``mode`` is ``base``, ``floor``, ``replay`` or ``setup`` (the first request)."""

    mode: str
    size: int
    engine: str = ""
    cache: str = ""


def child(path: str, mode: str, size: int, engine: str, cache: str, context_length: int) -> None:
    """What a counted process does (run under valgrind with ``--child``)."""
    from scale import first_requests
    from scaling import repeat_transcript, tokenize_distinct_once

    from contextlab import HostSettings, load_transcript, replay
    from contextlab.cache import CacheObserver
    from contextlab.tokens import load_encoding

    session = repeat_transcript(load_transcript(path), size)
    load_encoding("cl100k_base")
    if mode == "floor":
        tokenize_distinct_once(session)
    elif mode in ("replay", "setup"):
        if mode == "setup":
            session = first_requests(session, 1)
        observers = [CacheObserver(cache, "system_and_3")] if cache else []
        result = replay(session, engine, HostSettings(context_length=context_length), observers=observers)
        if result.status != "ok":
            raise SystemExit(f"{engine} at {size}x: replay ended {result.status}")


def count(job: Job, args: argparse.Namespace) -> dict[str, int]:
    """Run ``job`` under cachegrind and read its counts from valgrind's summary."""
    child_args = [*(job.mode, str(job.size), job.engine or "-", job.cache or "-")]
    child_args += ["--path", args.path, "--context-length", str(args.context_length)]
    return cachegrind([__file__, "--child", *child_args], cache_sim=args.cache_sim, label=str(job))


def cachegrind(script_args: list[str], *, cache_sim: bool = False, label: str = "") -> dict[str, int]:
    """Run ``python script_args...`` under cachegrind (hash seed fixed) and read its counts from
    valgrind's summary: ``instructions``, and with ``cache_sim`` ``d1_misses`` and ``ll_misses``."""
    command = [
        "valgrind",
        "--tool=cachegrind",
        f"--cache-sim={'yes' if cache_sim else 'no'}",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        *script_args,
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryFile("w+") as log:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=log, env=env, check=False)
        log.seek(0)
        text = log.read()
    if done.returncode != 0:
        last = [line for line in text.splitlines() if line and not line.startswith("==")][-1:]
        raise RuntimeError(f"{label}: exit {done.returncode}: {last[0] if last else 'no message'}")
    found = {name: int(m.group(1).replace(",", "")) for name, pattern in _COUNTS.items() if (m := pattern.search(text))}
    if "instructions" not in found:
        raise RuntimeError(f"{label}: no instruction count in valgrind's output")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,8", help="repetitions of the session (comma-separated)")
    parser.add_argument("--engines", default="passthrough,retrieval")
    parser.add_argument("--cache", default="anthropic:claude-opus-5-5", help="the one cache profile ('' for none)")
    parser.add_argument("--context-length", type=int, default=128_000)
    parser.add_argument("--path", default=str(REPO / "datasets" / "coding-agent.jsonl.gz"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes counted at once")
    parser.add_argument("--cache-sim", action="store_true", help="also simulate the caches (data misses)")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "SIZE", "ENGINE", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, size, engine, cache = args.child
        child(args.path, mode, int(size), engine, "" if cache == "-" else cache, args.context_length)
        return
    # A usage error is reported whatever the machine has (before looking for valgrind).
    sizes = whole_numbers(parser, "--sizes", args.sizes, each="each size")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found: install it (Debian and Ubuntu: apt-get install valgrind)")
    engines = [e for e in args.engines.split(",") if e]
    caches = ["", args.cache] if args.cache else [""]
    jobs = [Job("base", k) for k in sorted({1, *sizes})] + [Job("floor", k) for k in sizes]
    jobs += [Job("replay", k, engine, cache) for engine in engines for cache in caches for k in sizes]
    jobs += [Job("setup", 1, engine, cache) for engine in engines for cache in caches]
    jobs.sort(key=lambda job: -job.size)  # the longest first, so the pool ends together
    print(f"{Path(args.path).name}: {len(jobs)} processes under cachegrind, {args.jobs} at a time", flush=True)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: count(job, args), jobs), strict=True))
    base = {k: counts[Job("base", k)] for k in {1, *sizes}}
    floor = {k: counts[Job("floor", k)]["instructions"] - base[k]["instructions"] for k in sizes}
    print("floor: " + ", ".join(f"{k}x {floor[k] / 1e9:.2f} G instructions" for k in sizes))
    header = f"{'engine':<16}{'cache':<7}{'size':>5}{'G instr.':>10}{'/floor':>8}{'vs 1x':>7}"
    print(header + (f"{'D1 MPKI':>9}{'LL MPKI':>9}" if args.cache_sim else ""))
    worst = 0.0
    for engine in engines:
        for cache in caches:
            first: float | None = None
            setup = counts[Job("setup", 1, engine, cache)]
            for k in sizes:
                found = counts[Job("replay", k, engine, cache)]
                # Less the base of its size (loading and repeating k copies) and the setup's own work.
                own = {name: found[name] - base[k][name] - (setup[name] - base[1][name]) for name in found}
                ratio = own["instructions"] / floor[k]
                first = ratio if first is None else first
                worst = max(worst, ratio / first)
                line = f"{engine:<16}{'yes' if cache else 'no':<7}{k:>4}x{own['instructions'] / 1e9:>10.2f}"
                line += f"{ratio:>8.2f}{ratio / first:>7.2f}"
                if args.cache_sim:
                    per_k = 1000 / own["instructions"]
                    line += f"{own['d1_misses'] * per_k:>9.2f}{own['ll_misses'] * per_k:>9.3f}"
                print(line, flush=True)
    verdict = "within" if worst <= LIMIT else "OVER"
    print(f"largest growth of the instruction ratio over its 1x value: {worst:.2f} ({verdict} the {LIMIT}x target)")


if __name__ == "__main__":
    main()
