"""``contextlab bench [CONFIG.yaml | PATH...]``: sweep transcripts x engines x parameters and write the results.

With no argument, every available engine runs over the bundled datasets into ``runs/<timestamp>/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from contextlab import schema
from contextlab.bench.config import BenchConfig, default_config, load_config, timestamped_out
from contextlab.bench.run import run_config
from contextlab.cli.common import add_host_options, add_plugin_options, run_options
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.report import engine_table

TABLE_WIDTH = 100
"""Printed tables fit a 100-column terminal (long engine, params and transcript names are cut with …)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench", help="sweep transcripts x engines x parameters", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="CONFIG.yaml|PATH",
        help="a sweep config file, or transcript files, folders, globs or bundled dataset names "
        "(none: every engine over the bundled datasets)",
    )
    parser.add_argument("--engine", action="append", default=[], metavar="NAME", help="engine name (repeatable)")
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="sweep a host setting or engine parameter; ENGINE.KEY=... applies to one engine",
    )
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="use only the first N conversations")
    parser.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--executor", choices=["local", "dask"], default=None, help="local pool (default) or dask")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help="dask scheduler, e.g. tcp://host:8786")
    parser.add_argument(
        "--run-timeout", type=float, default=None, metavar="S", help="stop a run after S seconds (status timeout)"
    )
    parser.add_argument("--out", default=None, metavar="DIR", help="write frames, plots, report.html, config.yaml")
    parser.add_argument("--format", choices=["csv", "parquet"], default=None, help="frame files (default csv)")
    parser.add_argument(
        "--cache",
        action="append",
        default=[],
        metavar="PROVIDER[:MODEL]",
        help="simulate prompt caching (repeatable; the first fills cache_hit_rate and cost)",
    )
    parser.add_argument("--cache-policy", default=None, help="marker policy (default system_and_3)")
    parser.add_argument(
        "--no-probes",
        dest="probes",
        action="store_false",
        default=None,
        help="skip the measurement probe: no retention, loss and break-cause columns or frames (a faster sweep)",
    )
    parser.add_argument("--by", choices=["engine", "transcript"], default="engine", help="one row per engine (default)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (also off when TQDM_DISABLE=1)")
    add_host_options(parser)
    add_plugin_options(parser)
    parser.set_defaults(run=run)


def parse_grid(pairs: list[str]) -> dict[str, list[Any]]:
    """``["threshold_percent=0.5,0.75"]`` → ``{"threshold_percent": [0.5, 0.75]}`` (values parsed as YAML)."""
    grid: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        engine, dot, name = key.strip().rpartition(".")
        key = f"{engine}{dot}{name.replace('-', '_')}"
        if not sep or not name or not raw.strip():
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


def _is_config(sources: list[str]) -> bool:
    return len(sources) == 1 and sources[0].lower().endswith((".yaml", ".yml"))


def build_config(args: argparse.Namespace) -> tuple[BenchConfig, HostSettings]:
    """The sweep the command line describes: a config file, the defaults, or sources; options given win.

    The host ``--config`` and the host options layer as for every command (:class:`RunOptions`): an
    option given on the command line overrides the sweep file even when it equals the default value.
    """
    if _is_config(args.sources):
        config = load_config(args.sources[0])
    elif not args.sources:
        config = default_config()
        config.out = args.out or timestamped_out()
    else:
        config = BenchConfig(transcripts=list(args.sources))
    options = run_options(args, args.engine)  # --plugin-path folders, and the host's config.yaml (--config)
    if options.engines:
        config.engines = options.engines
    config.settings = options.settings(between=config.settings)
    plain, scoped = options.compressor_params(config.engines)
    config.params = {**plain, **config.params, **options.params}
    config.grid = {**scoped, **config.grid, **parse_grid(args.grid)}
    if args.cache:
        config.cache = list(args.cache)
    for name in ("cache_policy", "probes", "workers", "executor", "scheduler", "run_timeout", "out", "format", "limit"):
        value = getattr(args, name)
        if value is not None:
            setattr(config, name, value)
    if config.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {config.workers}")
    if config.limit is not None and config.limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {config.limit}")
    return config, HostSettings()


def run(args: argparse.Namespace) -> int:
    config, base = build_config(args)
    try:
        sweep = run_config(config, settings=base, progress=False if args.no_progress else None)
    except KeyboardInterrupt:
        if config.out:
            print(
                f"interrupted: finished runs are kept in {Path(config.out) / 'cells'}; run the same command to resume"
            )
        raise
    result = sweep.result
    if result.reused:
        print(f"resumed: {result.reused} of {len(result.summaries)} runs were already finished in {sweep.out}")
    print(render_table(result.summaries, by=args.by))
    for _, row in result.failed.iterrows():
        print(f"{str(row['status']).upper()} {row['transcript']} x {row['engine']} ({row['params']}): {row['error']}")
    if sweep.files:
        print(f"wrote {sweep.out}/: " + ", ".join(sorted(p.name for p in sweep.files.values())) + ", plots/")
    return 0 if result.failed.empty else 1


COLUMNS: list[tuple[str, str]] = [
    # (column of the engine table, header); values are formatted by their declared unit (contextlab.schema)
    ("runs", "runs"),
    ("failed", "fail"),
    ("requests", "requests"),
    ("compactions", "comp"),
    ("prompt_tokens_max", "peak tok"),
    ("prefix_share", "prefix"),
    ("cache_hit_rate", "cache hit"),
    ("cost_usd", "cost"),
    ("fact_retention_final", "retained"),
    ("violations", "viol"),
]


def render_table(summaries: pd.DataFrame, by: str = "engine", width: int = TABLE_WIDTH) -> str:
    """One row per engine and parameters (``by="transcript"``: per transcript too), fitting ``width``."""
    keys = ["transcript", "engine", "params"] if by == "transcript" else ["engine", "params"]
    table = engine_table(summaries, by=keys)
    shown: dict[str, list[str]] = {}
    for key in keys:
        shown[key] = [str(v) for v in table[key]]
    shown["params"] = varying_params(shown["params"])
    for column, header in COLUMNS:
        if column not in table.columns:
            continue
        unpriced = column == "cost_usd" and bool(pd.to_numeric(summaries[column], errors="coerce").isna().all())
        # Columns that say nothing in this table are left out, so names keep their room.
        silent = column in ("failed", "violations") and not bool(table[column].any())
        silent = silent or (column == "runs" and by == "transcript" and bool((table[column] == 1).all()))
        if not unpriced and not silent:
            shown[header] = [_cell(column, v) for v in table[column]]
    frame = pd.DataFrame(shown)
    # Cut the widest name column until the table fits.
    for _ in range(200):
        text = frame.to_string(index=False)
        if max(len(line) for line in text.splitlines()) <= width:
            return text
        name = max(keys, key=lambda k: frame[k].str.len().max())
        limit = int(frame[name].str.len().max()) - 1
        if limit < 6:
            return text
        frame[name] = frame[name].map(lambda v, n=limit: v if len(v) <= n else v[: n - 1] + "…")
    return frame.to_string(index=False)


def varying_params(labels: list[str]) -> list[str]:
    """Parameter labels with the parts every row shares left out (``-`` when nothing varies)."""
    parts = [label.split(",") for label in labels]
    common = set.intersection(*(set(p) for p in parts)) if len(parts) > 1 else set()
    varying = [",".join(p for p in row if p not in common) or "-" for row in parts]
    return labels if all(v == "-" for v in varying) else varying  # one setting for all: show it


def _cell(column: str, value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and schema.unit_of(column) not in ("share", "usd"):
        value = int(value)  # a count that went through a float column (a group with a missing value)
    return schema.format_value(column, value)
