"""Loading speed: contextlab's importers against plain ``json`` parsing of the same files.

Usage: python benchmarks/load_speed.py [FOLDER] [--repeat N]

FOLDER defaults to ``$CONTEXTLAB_TRANSCRIPTS`` or ``../shared/transcripts``. For every format folder
the script times (best of N) reading + ``json.loads`` of each file (per line for JSON Lines) as the
baseline, then ``load_transcripts`` on the same files, and prints the ratio. The issue's budget is
a ratio of at most 3.0 over the whole set.

``load_transcripts`` pauses the cyclic garbage collector while it parses; so that this does not
flatter the ratio, the baseline is the faster of plain parsing with the collector on and paused.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from contextlab.transcripts import load_transcripts

REPO = Path(__file__).resolve().parent.parent
BUDGET = 3.0


def files_of(folder: Path) -> dict[str, list[Path]]:
    """Transcript files per top-level format folder (licences, CSVs and READMEs left out)."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name.endswith((".json", ".jsonl", ".traj", ".gz")):
            groups.setdefault(path.relative_to(folder).parts[0], []).append(path)
    return groups


def plain_json(paths: list[Path]) -> int:
    """The baseline: what parsing the files with nothing but ``json`` costs."""
    values = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if path.name.endswith(".jsonl"):
            values += sum(1 for line in text.splitlines() if line.strip() and json.loads(line) is not None)
        else:
            values += json.loads(text) is not None
    return values


def plain_json_gc_paused(paths: list[Path]) -> int:
    gc.disable()
    try:
        return plain_json(paths)
    finally:
        gc.enable()


def contextlab_load(paths: list[Path]) -> int:
    messages = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in paths:
            messages += sum(len(t.messages) for t in load_transcripts(path))
    return messages


def best_of(repeat: int, fn: Callable[[list[Path]], int], paths: list[Path]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn(paths)
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("CONTEXTLAB_TRANSCRIPTS", str(REPO.parent / "shared" / "transcripts"))
    parser.add_argument("folder", nargs="?", default=default)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    groups = files_of(Path(args.folder))
    if not groups:
        print(f"no transcript files under {args.folder}", file=sys.stderr)
        return 2
    rows = []
    total_base = total_ours = 0.0
    for name, paths in groups.items():
        base = min(best_of(args.repeat, plain_json, paths), best_of(args.repeat, plain_json_gc_paused, paths))
        ours = best_of(args.repeat, contextlab_load, paths)
        total_base += base
        total_ours += ours
        size = sum(p.stat().st_size for p in paths) / 1e6
        rows.append((name, len(paths), size, base * 1e3, ours * 1e3, ours / base))
    size_all = sum(r[2] for r in rows)
    rows.append(
        (
            "ALL",
            sum(r[1] for r in rows),
            size_all,
            total_base * 1e3,
            total_ours * 1e3,
            total_ours / total_base,
        )
    )
    print(f"{'folder':<20} {'files':>5} {'MB':>7} {'json ms':>9} {'load ms':>9} {'ratio':>6}")
    for name, n, size, base_ms, ours_ms, ratio in rows:
        print(f"{name:<20} {n:>5} {size:>7.1f} {base_ms:>9.1f} {ours_ms:>9.1f} {ratio:>6.2f}")
    verdict = "within" if rows[-1][-1] <= BUDGET else "OVER"
    print(f"\noverall ratio {rows[-1][-1]:.2f} ({verdict} the {BUDGET:.0f}x budget; best of {args.repeat} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
