"""Scale: replay time and memory as a session grows, against the tokenization floor at each size.

Usage::

    python benchmarks/scale.py [--sizes 1,2,4,8] [--engines passthrough,compressor,...] [--cache PROFILE]
                               [--memory-check 5000] [--repeat 3] [--param KEY=VALUE ...]

``coding-agent`` is repeated 1x, 2x, 4x and 8x as one session (each copy's texts made distinct, see
``benchmarks/scaling.py``), and replayed at a 128K window through each engine, without and with one
cache profile. Each replay runs in a forked child on a cold token memo.

This machine's speed moves by a third from one child to the next and drifts by up to half over an
hour, so the script spends its time where the growth figures are most exposed to that. Each size
gets the same CPU: ``--repeat R`` children at the largest size and proportionally more at the
smaller ones (R x 8 at 1x for sizes up to 8x), and a cell is its children's median. Within one
engine and cache the children of every size are spread evenly over the block (the 8x child in its
middle, the 1x children all through it), so a drift over the block moves every size alike. The
floor is the time to tokenize every distinct text of the session once; every child times it just
before its replay, and the floor at each size is the median of all of that size's timings over the
run, taken like the cells themselves. A linear replay keeps ``cpu / floor`` flat: the final table
gives each size's ratio over the 1x ratio (target: at most 1.5), and the mean rows per request past the
prefix it shares with the previous request (``suffix/req``: the rows every layer looks at one by one,
which the floor does not count). With ``--memory-check N`` it also
replays the first N requests of enough copies through ``passthrough`` (without and with the cache
profile) and reports the peak memory growth (target: under 500 MB).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from forked import in_fork
from scaling import repeat_transcript, tokenize_distinct_once

from contextlab import HostSettings, Transcript, load_transcript, replay
from contextlab.cache import CacheObserver
from contextlab.cli.common import engine_params
from contextlab.errors import ConfigError
from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE
from contextlab.tokens import load_encoding

# Timed as a first sight: a transcript's probe targets are extracted, not read back from the on-disk
# target store (which a rerun would otherwise find filled); set the variable to time the store.
os.environ.setdefault(TARGET_STORE, "off")

REPO = Path(__file__).resolve().parent.parent
ENGINES = ["passthrough", "compressor", "mask_window", "clear_tool_uses", "summary", "hybrid", "lcm", "retrieval"]
LIMIT = 1.5
MEMORY_LIMIT_MB = 500


def run_child(
    transcript: Transcript,
    engine: str,
    cache: str | None,
    context_length: int,
    *,
    time_floor: bool = True,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """In a forked child: the floor's CPU seconds (unless not ``time_floor``), then the replay's, and
    its peak RSS growth (MB)."""

    def measure() -> str:
        # The parent's objects are the harness's: frozen, full collections scan only the replay's.
        gc.freeze()
        floor = tokenize_distinct_once(transcript) if time_floor else 0.0
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.process_time()
        observers = [CacheObserver(cache, "system_and_3")] if cache else []
        settings = HostSettings(context_length=context_length)
        result = replay(transcript, engine, settings, observers=observers, params=params or None)
        cpu = time.process_time() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report = {"floor": floor, "cpu": cpu, "mb": (peak - before) / 1024}
        # Rows per request after the prefix shared with the previous request: what the host, the
        # cache model and the probe look at row by row. An engine whose requests reshuffle more rows
        # as the session grows (at equal tokens) does work the text floor does not grow with.
        trace = result.trace
        suffix = float((trace["n_messages"] - trace["prefix_messages"]).mean()) if len(trace) else 0.0
        return json.dumps({**report, "requests": len(trace), "suffix_rows": suffix, "ok": result.status})

    ok, report = in_fork(measure)
    found: dict[str, Any] = json.loads(report) if ok else {"error": report}
    return found


def spread(cell: dict[str, Any]) -> str:
    """The range of a cell's children's CPU seconds (how far one child moves on this machine: a
    growth nearer the target than that is not a verdict), or one child's time."""
    low, high = cell["cpu_range"]
    if cell["children"] < 2:
        return "1 child"
    return f"{low:.2f}-{high:.2f} ({cell['children']}, {high / low - 1:.0%} apart)"


def schedule(sizes: list[int], repeat: int) -> list[int]:
    """The sizes of one engine and cache's children, in the order they run: ``repeat`` children at
    the largest size and proportionally more at smaller ones, each size's children at evenly spread
    places in the block (the j-th of n at (j + 1/2) / n of the way through it)."""
    largest = max(sizes)
    places: list[tuple[float, int]] = []
    for k in sizes:
        n = max(1, round(max(1, repeat) * largest / k))
        places += [((j + 0.5) / n, k) for j in range(n)]
    return [k for _, k in sorted(places)]


def block(
    sessions: dict[int, Transcript],
    repeat: int,
    engine: str,
    cache: str | None,
    context_length: int,
    params: dict[str, Any] | None = None,
) -> dict[int, dict[str, Any]]:
    """One engine and cache at every size: per size, the median CPU of its children and their range,
    the largest memory growth and every child's floor timing (or the first child's error)."""
    runs: dict[int, list[dict[str, Any]]] = {k: [] for k in sessions}
    for k in schedule(list(sessions), repeat):
        runs[k].append(run_child(sessions[k], engine, cache, context_length, params=params))
    cells: dict[int, dict[str, Any]] = {}
    for k, found in runs.items():
        failed = [r for r in found if "error" in r]
        cells[k] = (
            failed[0]
            if failed
            else {
                "cpu": statistics.median(float(r["cpu"]) for r in found),
                "cpu_range": (min(float(r["cpu"]) for r in found), max(float(r["cpu"]) for r in found)),
                "mb": max(float(r["mb"]) for r in found),
                "requests": found[0]["requests"],
                "suffix_rows": found[0]["suffix_rows"],
                "floors": [float(r["floor"]) for r in found],
                "children": len(found),
            }
        )
    return cells


def first_requests(transcript: Transcript, requests: int) -> Transcript:
    """The transcript cut after its ``requests``-th assistant message (and that message's tool results)."""
    seen = 0
    cut = len(transcript.messages)
    for i, message in enumerate(transcript.messages):
        if message.get("role") == "assistant":
            if seen == requests:
                cut = i
                break
            seen += 1
    return Transcript(
        f"{transcript.transcript_id}[:{requests}]",
        transcript.messages[:cut],
        transcript.system_prompt,
        transcript.tools,
        usage={i: u for i, u in transcript.usage.items() if i < cut},
        timestamps={i: t for i, t in transcript.timestamps.items() if i < cut},
        model=transcript.model,
        source_format=transcript.source_format,
    )


def memory_check(base: Transcript, requests: int, context_length: int, cache: str | None) -> None:
    """Peak memory growth of a ``requests``-request passthrough replay (target: under 500 MB)."""
    copies = -(-requests // max(1, base.n_requests))
    session = first_requests(repeat_transcript(base, copies), requests)
    for label in (None, cache) if cache else (None,):
        found = run_child(session, "passthrough", label, context_length, time_floor=False)
        if "error" in found:
            print(f"memory check failed: {found['error']}")
            continue
        verdict = "within" if found["mb"] < MEMORY_LIMIT_MB else "OVER"
        print(
            f"memory: passthrough{' + ' + label if label else ''}, {found['requests']:,.0f} requests: "
            f"peak growth {found['mb']:.0f} MB, {found['cpu']:.1f} CPU s ({verdict} the {MEMORY_LIMIT_MB} MB target)",
            flush=True,
        )


def engine_param(pair: str) -> tuple[str, Any]:
    """One ``KEY=VALUE`` engine parameter, read as ``contextlab replay --param`` reads it."""
    try:
        [(key, value)] = engine_params([pair]).items()
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return key, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,8", help="repetitions of coding-agent (comma-separated)")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--cache", default="anthropic:claude-opus-5-5", help="the one cache profile ('' for none)")
    parser.add_argument("--context-length", type=int, default=128_000)
    parser.add_argument("--path", default=str(REPO / "datasets" / "coding-agent.jsonl.gz"))
    parser.add_argument("--memory-check", type=int, default=0, help="also replay this many requests for memory")
    parser.add_argument(
        "--repeat", type=int, default=1, help="children at the largest size (more at smaller ones); cells are medians"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        type=engine_param,
        metavar="KEY=VALUE",
        help="an engine parameter for every engine of the run (repeatable; read as `contextlab replay --param`)",
    )
    args = parser.parse_args()
    params = dict(args.param)
    sizes = [int(s) for s in args.sizes.split(",")]
    engines = [e for e in args.engines.split(",") if e]
    caches: list[str | None] = [None, args.cache] if args.cache else [None]
    load_encoding("cl100k_base")
    base = load_transcript(args.path)
    sessions = {k: repeat_transcript(base, k) for k in sizes}
    print(f"{base.transcript_id}: {base.n_requests} requests per copy; window {args.context_length:,}; CPU seconds")
    if params:
        print("engine parameters: " + ", ".join(f"{k}={v!r}" for k, v in params.items()))
    counts = {k: schedule(sizes, args.repeat).count(k) for k in sizes}
    print(
        "each cell: the median CPU of its forked children (" + ", ".join(f"{k}x {n}" for k, n in counts.items()) + ")"
    )
    cells: list[tuple[str, str, int, dict[str, Any]]] = []
    floors: dict[int, list[float]] = {k: [] for k in sizes}
    for engine in engines:
        for cache in caches:
            label = "yes" if cache else "no"
            cells_of = block(sessions, args.repeat, engine, cache, args.context_length, params)
            for k, found in cells_of.items():
                if "error" in found:
                    print(f"{engine:<16}{label:<7}{k:>4}x  failed: {found['error']}", flush=True)
                    continue
                floors[k] += found["floors"]
                cells.append((engine, label, k, found))
                print(f"  {engine} {label} {k}x: {found['cpu']:.2f} CPU s", flush=True)
    floor = {k: statistics.median(v) for k, v in floors.items() if v}
    print("floor (median over the run): " + ", ".join(f"{k}x {floor[k]:.3f} s ({len(floors[k])})" for k in floor))
    print(
        f"{'engine':<16}{'cache':<7}{'size':>5}{'requests':>9}{'suffix/req':>11}{'cpu s':>9}{'peak MB':>9}"
        f"{'/floor':>8}{'vs 1x':>7}  children's cpu s"
    )
    worst = 0.0
    first: dict[tuple[str, str], float] = {}
    for engine, label, k, found in cells:
        ratio = found["cpu"] / floor[k]
        growth = ratio / first.setdefault((engine, label), ratio)
        worst = max(worst, growth)
        print(
            f"{engine:<16}{label:<7}{k:>4}x{found['requests']:>9.0f}{found['suffix_rows']:>11.0f}{found['cpu']:>9.2f}"
            f"{found['mb']:>9.0f}{ratio:>8.1f}{growth:>7.2f}  {spread(found)}"
        )
    verdict = "within" if worst <= LIMIT else "OVER"
    print(f"largest growth of the floor ratio over its 1x value: {worst:.2f} ({verdict} the {LIMIT}x target)")
    if args.memory_check:
        memory_check(base, args.memory_check, args.context_length, args.cache or None)


if __name__ == "__main__":
    main()
