"""``contextlab check ENGINE [--transcript PATH] [--json]``: run the conformance kit on an engine."""

from __future__ import annotations

import argparse
import json
from typing import Any

from contextlab.cli.common import add_plugin_options, configured_run
from contextlab.errors import ConfigError
from contextlab.testing import check_engine
from contextlab.transcripts import load_transcripts


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("check", help="check an engine against the host contract", description=__doc__)
    parser.add_argument(
        "engine", nargs="?", default=None, help="engine name (see `contextlab engines`; default: --config's)"
    )
    parser.add_argument(
        "--transcript",
        action="append",
        default=[],
        metavar="PATH",
        help="also drive the engine through every conversation in PATH (repeatable)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=3,
        metavar="N",
        help="use at most N conversations from each --transcript file (default 3)",
    )
    parser.add_argument(
        "--context-length",
        type=int,
        default=None,
        metavar="N",
        help="window given to the engine (default: 60%% of each conversation)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine constructor parameter (repeatable; VALUE parsed as YAML)",
    )
    parser.add_argument("--threads", type=int, default=4, help="concurrent clones for the concurrency rule")
    parser.add_argument(
        "--full",
        action="store_true",
        help="also drive every project dataset (slow: includes a 1M-token session)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_plugin_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.engine is None and args.config is None:
        raise ConfigError("check: name an engine (see `contextlab engines`) or pass --config config.yaml")
    names, _, params = configured_run(args, [args.engine] if args.engine else [])
    extra = []
    for path in args.transcript:
        extra += load_transcripts(path)[: max(1, args.limit)]
    report = check_engine(
        names[0],
        params,
        extra_transcripts=extra,
        context_length=args.context_length,
        threads=max(1, args.threads),
        full=args.full,
        progress=None if not args.json else False,
    )
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.format())
    return 0 if report.ok else 1
