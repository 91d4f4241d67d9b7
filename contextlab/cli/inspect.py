"""``contextlab inspect PATH``: what a transcript file holds (format, conversations, messages,
requests, tokens, recorded usage, warnings), without replaying it."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from contextlab.cli.common import format_table
from contextlab.transcripts.inspection import describe_file


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("inspect", help="list a transcript file's conversations", description=__doc__)
    parser.add_argument("path", help="transcript file (any supported format; .gz allowed)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per conversation")
    parser.add_argument("--encoding", default="cl100k_base", help="tiktoken encoding for the token column")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rows, seconds, warned = describe_file(args.path, args.encoding)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"{args.path}: {len(rows)} conversation(s), format {', '.join(sorted({r['format'] for r in rows}))}")
    table = pd.DataFrame(rows)
    print(format_table(table))
    total = table[["messages", "requests", "tokens", "recorded_usage", "violations"]].sum()
    print(
        f"total: {total['messages']:,} messages, {total['requests']:,} requests, {total['tokens']:,} tokens, "
        f"{total['recorded_usage']:,} requests with recorded usage, {total['violations']:,} structural violations, "
        f"{warned} import warning(s); loaded in {seconds:.2f} s"
    )
    return 0
