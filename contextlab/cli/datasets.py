"""``contextlab datasets list|generate``: show and regenerate the project's generated datasets."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.cli.common import format_table
from contextlab.datasets import DATASETS, dataset_path, describe, generate, load_dataset, spec, write_dataset
from contextlab.errors import ConfigError
from contextlab.transcripts import native


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("datasets", help="list or regenerate the generated datasets", description=__doc__)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="show every dataset with its size and facts")
    listing.add_argument(
        "--dir",
        default=None,
        metavar="DIR",
        help="dataset folder (default: the installed datasets, datasets/ in a checkout)",
    )
    listing.set_defaults(run=run_list)
    gen = actions.add_parser("generate", help="(re)generate dataset files, byte-identical for a given seed")
    gen.add_argument("names", nargs="*", metavar="NAME", help="datasets to generate (default: all)")
    gen.add_argument(
        "--dir",
        default=None,
        metavar="DIR",
        help="output folder (default: the installed datasets, datasets/ in a checkout)",
    )
    gen.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file differs from a fresh generation"
    )
    gen.set_defaults(run=run_generate)


def dataset_table(folder: Path | None = None) -> pd.DataFrame:
    """One row per dataset: name, requests, messages, exact tokens, facts, file state."""
    rows = []
    for name in DATASETS:
        path = dataset_path(name, folder)
        figures = describe(load_dataset(name, folder))
        rows.append(
            {
                "name": name,
                **figures,
                "file": path.name if path.exists() else "(not generated)",
                "description": spec(name).description,
            }
        )
    return pd.DataFrame(rows)


def run_list(args: argparse.Namespace) -> int:
    print(format_table(dataset_table(_folder(args.dir))))
    return 0


def run_generate(args: argparse.Namespace) -> int:
    folder = _folder(args.dir, create=not args.check)
    names = args.names or list(DATASETS)
    for name in names:
        spec(name)  # fail on a typo before any work
    stale = 0
    for name in names:
        path = dataset_path(name, folder)
        if args.check:
            fresh = native.dumps(generate(name))
            current = _text(path)
            same = current == fresh
            stale += not same
            print(f"{name}: {'up to date' if same else 'DIFFERS from a fresh generation'} ({path})")
        else:
            written = write_dataset(name, folder)
            print(f"{name}: wrote {written} ({written.stat().st_size:,} bytes)")
    return 1 if stale else 0


def _text(path: Path) -> str | None:
    import gzip

    if not path.exists():
        return None
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")


def _folder(value: str | None, create: bool = False) -> Path | None:
    if value is None:
        return None
    folder = Path(value)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--dir {value}: not a folder")
    if not folder.exists() and not create:
        raise ConfigError(f"--dir {value}: folder does not exist")
    return folder
