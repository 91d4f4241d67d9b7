"""``contextlab bench PATH... --engine A --engine B [--grid KEY=V1,V2]``: sweep and write the frames."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from contextlab.bench import FRAME_NAMES, bench, collect_transcripts
from contextlab.cli.common import add_host_options, add_plugin_options, cache_observers, configured_run, format_table
from contextlab.errors import ConfigError

SHOWN = [
    "transcript",
    "engine",
    "params",
    "status",
    "requests",
    "compactions",
    "prompt_tokens_total",
    "prefix_share",
    "cache_hit_rate",
    "cost_usd",
]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bench", help="sweep transcripts x engines x parameters", description=__doc__)
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="transcript files (every conversation in each is replayed)"
    )
    parser.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="NAME",
        help="engine name (repeatable; default passthrough)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="sweep a host setting (threshold_percent, context_length, ...) or an engine parameter",
    )
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="use only the first N conversations")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--out", default=None, metavar="DIR", help="write trace, compactions and summary files here")
    parser.add_argument(
        "--format", choices=["csv", "parquet"], default="csv", help="file format for --out (default csv)"
    )
    parser.add_argument(
        "--cache",
        action="append",
        default=[],
        metavar="PROVIDER[:MODEL]",
        help="simulate prompt caching (repeatable; the first fills cache_read_tokens, cost_usd, ...)",
    )
    parser.add_argument("--cache-policy", default="system_and_3", help="marker policy (default system_and_3)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (also off when TQDM_DISABLE=1)")
    add_host_options(parser)
    add_plugin_options(parser)
    parser.set_defaults(run=run)


def parse_grid(pairs: list[str]) -> dict[str, list[Any]]:
    """``["threshold_percent=0.5,0.75"]`` → ``{"threshold_percent": [0.5, 0.75]}`` (values parsed as YAML)."""
    grid: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key or not raw.strip():
            raise ConfigError(f"--grid {pair!r}: expected KEY=V1,V2,...")
        if key in grid:
            raise ConfigError(f"--grid {key}: given twice")
        grid[key] = [_value(v.strip()) for v in raw.split(",") if v.strip()]
    return grid


def _value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    grid = parse_grid(args.grid)
    engines, settings, params = configured_run(args, args.engine)
    transcripts = collect_transcripts(args.paths)
    if args.limit is not None:
        if args.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {args.limit}")
        transcripts = transcripts[: args.limit]
    result = bench(
        transcripts,
        engines,
        grid,
        settings=settings,
        params=params,
        observers=cache_observers(args.cache, args.cache_policy),
        workers=args.workers,
        progress=False if args.no_progress else None,
    )
    summaries = result.summaries
    print(format_table(summaries[[c for c in SHOWN if c in summaries.columns]]))
    for _, row in result.failed.iterrows():
        print(f"FAILED {row['transcript']} x {row['engine']} ({row['params']}): {row['error']}")
    if out is not None:
        written = result.write(out, args.format)
        print("wrote " + ", ".join(str(written[name]) for name in FRAME_NAMES))
    return 0 if result.failed.empty else 1
