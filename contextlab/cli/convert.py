"""``contextlab convert IN OUT``: any supported transcript format to contextlab's normalized JSONL."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextlab.cli.common import check_writable
from contextlab.errors import ConfigError
from contextlab.transcripts import convert_file


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("convert", help="convert a transcript file to normalized JSONL", description=__doc__)
    parser.add_argument("input", metavar="IN", help="transcript file in any supported format (.gz allowed)")
    parser.add_argument("output", metavar="OUT", help="normalized JSON Lines file to write (.jsonl or .jsonl.gz)")
    parser.add_argument(
        "--index", type=int, default=None, help="convert only this conversation of a multi-conversation file"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if not out.name.endswith((".jsonl", ".jsonl.gz")):
        raise ConfigError(f"OUT {args.output}: use a .jsonl or .jsonl.gz file name")
    if not out.parent.exists():
        raise ConfigError(f"OUT {args.output}: folder {out.parent} does not exist")
    check_writable(out, "OUT")
    written = convert_file(args.input, out, index=args.index)
    messages = sum(len(t.messages) for t in written)
    requests = sum(t.n_requests for t in written)
    formats = ", ".join(sorted({t.source_format for t in written}))
    print(f"wrote {len(written)} transcript(s) ({formats}; {messages:,} messages, {requests:,} requests) to {out}")
    return 0
