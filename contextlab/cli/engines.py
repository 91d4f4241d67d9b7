"""``contextlab engines [--json]``: every engine contextlab can load, with source and availability."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from contextlab import plugins
from contextlab.cli.common import add_plugin_options, apply_plugin_options, format_table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("engines", help="list available engines (built-in and plugins)", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON list")
    add_plugin_options(parser)  # with --config, the engine that config.yaml selects is starred
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = apply_plugin_options(args)
    selected = config.engine if config is not None else None
    infos = plugins.list_engines()
    rows = [{**info.as_dict(), **({"selected": info.name == selected} if selected else {})} for info in infos]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = pd.DataFrame(
        [
            {
                "name": r["name"] + (" *" if r.get("selected") else ""),
                "source": r["source"],
                "version": r["version"],
                "available": "yes" if r["available"] else f"no: {r['error']}",
                "description": r["description"],  # format_table cuts it to fit
            }
            for r in rows
        ]
    )
    print(format_table(table))
    if selected:
        note = "" if selected in {r["name"] for r in rows} else " (not found!)"
        print(f"\n* selected by {args.config}: {selected}{note}")
    return 0
