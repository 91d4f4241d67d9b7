"""Replay one long real transcript through every engine; print what each did and how long it took.

Usage::

    python benchmarks/engines_replay.py [PATH] [--context-length N] [--overhead N] [--engines a,b] [--no-probes]

PATH defaults to the longest Claude Code session under ``$CONTEXTLAB_TRANSCRIPTS`` (or
``../shared/transcripts``). The Claude Code logs omit the ~26k-token system prompt and tool schemas,
hence ``--overhead 26000`` by default. Wall time is reported as a ratio to ``passthrough`` measured
in the same run (the replay host's own cost), so the engine's added cost is visible. Before each replay
the harness's objects are collected and frozen and the engines' text memos cleared. The measurement
probe is on, as in every replay, unless ``--no-probes``: then the ratios are the engines' own cost
over the host's, without the probe's per-row work (which grows with the rows an engine reshuffles,
and with ``lcm`` includes its recovery oracle's searches).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab import Transcript, load_transcript, replay
from contextlab.host import HostSettings
from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE
from contextlab.textmemo import clear_text_memos

# Timed as a first sight: a transcript's probe targets are extracted, not read back from the on-disk
# target store (which a rerun would otherwise find filled); set the variable to time the store.
os.environ.setdefault(TARGET_STORE, "off")

ENGINES: list[tuple[str, dict[str, Any]]] = [
    ("passthrough", {}),
    ("compressor", {}),
    ("mask_window", {}),
    ("mask_window", {"polling": 5}),
    ("clear_tool_uses", {}),
    ("summary", {}),
    ("summary", {"preset": "claude_code"}),
    ("hybrid", {}),
    ("lcm", {}),
    ("retrieval", {}),
]


def default_path() -> Path:
    root = Path(
        os.environ.get("CONTEXTLAB_TRANSCRIPTS", Path(__file__).resolve().parents[2] / "shared" / "transcripts")
    )
    sessions = sorted((root / "claude-code").glob("*-*-*-*-*.jsonl"), key=lambda p: p.stat().st_size)
    if not sessions:
        raise SystemExit(f"no Claude Code sessions under {root}/claude-code; pass a PATH")
    return sessions[-1]


def timed_replay(
    transcript: Transcript, name: str, params: dict[str, Any], settings: HostSettings, probes: bool = True
) -> dict[str, Any]:
    """One replay's wall and CPU seconds and summary, every engine from the same process state.

    Earlier replays leave objects behind (memos, the previous result until it is replaced) that the
    garbage collector would scan again and again: measured one after the other, the same engine ran
    10-20% slower at the end of the list than at its start. Collecting and freezing the harness's
    objects first keeps full collections to the replay's own objects (as ``benchmarks/scale.py``'s
    children do), and the engine's text memos start cold, as in a fresh process.
    """
    clear_text_memos()
    gc.collect()
    gc.freeze()
    started, started_cpu = time.perf_counter(), time.process_time()
    result = replay(transcript, name, settings, params=params, probes=probes)
    wall = time.perf_counter() - started
    cpu = time.process_time() - started_cpu  # CPU time: what counts on a shared machine
    return {"wall": wall, "cpu": cpu, "summary": result.summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=None)
    parser.add_argument("--context-length", type=int, default=200_000)
    parser.add_argument("--overhead", type=int, default=26_000)
    parser.add_argument(
        "--engines", default=None, help="comma-separated engine names to run after passthrough (default: all)"
    )
    parser.add_argument("--no-probes", dest="probes", action="store_false", help="replay without the measurement probe")
    args = parser.parse_args()
    chosen = [(n, p) for n, p in ENGINES if n == "passthrough" or not args.engines or n in args.engines.split(",")]
    path = Path(args.path) if args.path else default_path()
    transcript = load_transcript(path)
    settings = HostSettings(context_length=args.context_length, fixed_overhead_tokens=args.overhead)
    rows = []
    replay(transcript, "passthrough", settings)  # warm-up: tokenizer load, imports, first-touch memos
    warm = load_transcript(Path(__file__).resolve().parent.parent / "datasets" / "coding-agent-short.jsonl.gz")
    for name, params in chosen:  # each engine's imports (bm25s, ...) are not part of its replay
        replay(warm, name, HostSettings(context_length=8_000), params=params)
    base_wall = base_cpu = None
    for name, params in chosen:
        found = timed_replay(transcript, name, params, settings, args.probes)
        wall, cpu, s = found["wall"], found["cpu"], found["summary"]
        base_wall = base_wall or wall
        base_cpu = base_cpu or cpu
        rows.append(
            {
                "engine": name + ("" if not params else " " + ",".join(f"{k}={v}" for k, v in params.items())),
                "status": s["status"],
                "compactions": s["compactions"],
                "prunes": s["prunes"],
                "peak_prompt": s["prompt_tokens_max"],
                "prompt_total": s["prompt_tokens_total"],
                "prefix_breaks": s["prefix_breaks"],
                "prefix_share": round(s["prefix_share"], 3),
                "violations": s["violations"],
                "overflows": s["overflows"],
                "wall_s": round(wall, 2),
                "wall_x_passthrough": round(wall / base_wall, 2),
                "cpu_s": round(cpu, 2),
                "cpu_x_passthrough": round(cpu / base_cpu, 2),
            }
        )
    print(
        f"{transcript.transcript_id}: {len(transcript.messages)} messages, {transcript.n_requests} requests, "
        f"window {args.context_length:,}, overhead {args.overhead:,}"
    )
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
