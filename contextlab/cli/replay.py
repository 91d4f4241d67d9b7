"""``contextlab replay PATH --engine NAME``: replay one transcript and summarize it."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from contextlab.api import replay
from contextlab.cli.common import (
    add_host_options,
    add_plugin_options,
    cache_observers,
    check_output_path,
    configured_run,
    format_table,
)
from contextlab.host.trace import summary_json
from contextlab.transcripts import load_transcript

SUMMARY_FIELDS = [
    ("requests", "requests"),
    ("turns", "turns"),
    ("compactions", "compactions"),
    ("prompt_tokens_total", "prompt tokens (total)"),
    ("prompt_tokens_max", "prompt tokens (peak)"),
    ("prefix_share", "prefix share"),
    ("prefix_breaks", "prefix breaks"),
    ("violations", "violations"),
    ("overflows", "overflows"),
]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("replay", help="replay a transcript through an engine", description=__doc__)
    parser.add_argument("path", help="transcript file (any supported format; .gz allowed)")
    parser.add_argument(
        "--engine", default=None, help="engine name (default: --config's context.engine, else passthrough)"
    )
    parser.add_argument(
        "--index", type=int, default=0, help="which conversation of a multi-conversation file (default 0)"
    )
    parser.add_argument("--out", default=None, metavar="FILE", help="write the per-request trace (.csv or .parquet)")
    parser.add_argument("--json", action="store_true", help="print the run summary as one JSON object")
    parser.add_argument(
        "--cache",
        action="append",
        default=[],
        metavar="PROVIDER[:MODEL]",
        help="simulate prompt caching for this provider (repeatable; the first owns the plain columns)",
    )
    parser.add_argument("--cache-policy", default="system_and_3", help="marker policy (default system_and_3)")
    add_host_options(parser)
    add_plugin_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = check_output_path(args.out)
    transcript = load_transcript(args.path, args.index)
    observers = cache_observers(args.cache, args.cache_policy)
    (engine,), settings, params = configured_run(args, [args.engine] if args.engine else [])
    result = replay(transcript, engine, settings, params=params, observers=observers)
    if out is not None:
        result.write(out)
    if args.json:
        print(summary_json(result.summary))
    else:
        print(render_summary(result.summary))
        if out is not None:
            print(f"trace written to {out} ({len(result.trace)} rows)")
    return 0 if result.status == "ok" else 1


def render_summary(summary: dict[str, Any]) -> str:
    """A two-column human summary of one run."""
    head = f"{summary['transcript']} x {summary['engine']} ({summary['params']})"
    rows = []
    for key, label in SUMMARY_FIELDS:
        value = summary.get(key)
        rows.append({"metric": label, "value": f"{value:.1%}" if key.endswith("share") else f"{value:,}"})
    for key in ("cache_hit_rate", "cost_usd", "fact_retention_mean", "fact_retention_final"):
        if key in summary:
            value = summary[key]
            shown = f"${value:,.4f}" if key == "cost_usd" else f"{value:.1%}"
            rows.append({"metric": key.replace("_", " "), "value": shown})
    if summary.get("status") != "ok":
        rows.append({"metric": "status", "value": f"FAILED: {summary.get('error')}"})
    return head + "\n" + format_table(pd.DataFrame(rows))
