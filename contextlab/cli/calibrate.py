"""``contextlab calibrate PATH``: replay recorded sessions as recorded and compare simulated with
recorded prompt-cache reads, request by request."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.calibrate import calibrate_many
from contextlab.cli.common import check_output_path, engine_params, format_table
from contextlab.errors import ConfigError

TABLE_COLUMNS = [
    ("transcript", "transcript"),
    ("requests", "requests"),
    ("unseen_prefix_tokens", "prefix"),
    ("token_scale", "scale"),
    ("recorded_read_share", "recorded"),
    ("simulated_read_share", "simulated"),
    ("share_error_pp", "error pp"),
    ("read_mae_tokens", "MAE tokens"),
    ("worst_requests", "worst (request:error)"),
]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("calibrate", help="compare simulated and recorded cache reads", description=__doc__)
    parser.add_argument("path", help="a transcript with recorded usage, or a folder of them")
    parser.add_argument(
        "--provider",
        default=None,
        metavar="P[:MODEL]",
        help="cache profile (default: guessed from the recorded model)",
    )
    parser.add_argument("--policy", default=None, help="marker policy (default: claude_code for Claude Code logs)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="profile option, e.g. granularity=2048 or hit_prob=0.9 (repeatable)",
    )
    parser.add_argument("--out", default=None, metavar="FILE", help="write the per-request frame (.csv or .parquet)")
    parser.add_argument("--plot", default=None, metavar="FILE.png", help="save the calibration plot (first transcript)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per transcript")
    parser.add_argument(
        "--index", type=int, default=0, help="which conversation of a multi-conversation file (default 0)"
    )
    parser.set_defaults(run=run)


def _paths(path: str) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix in (".jsonl", ".json", ".gz"))
        if not found:
            raise ConfigError(f"{p}: no .jsonl or .json transcripts in this folder")
        return found
    if not p.exists():
        raise ConfigError(f"{p}: no such file or folder")
    return [p]


def run(args: argparse.Namespace) -> int:
    out = check_output_path(args.out)
    if args.plot is not None and not Path(args.plot).parent.exists():
        raise ConfigError(f"--plot {args.plot}: folder does not exist")
    options = engine_params(args.option)
    paths = _paths(args.path)
    summary, results = calibrate_many(
        paths, args.provider, progress=False if args.json else None, policy=args.policy, index=args.index, **options
    )
    if len(paths) == 1 and not results:
        raise ConfigError(str(summary["error"].iloc[0]))  # one file that cannot be calibrated: a user error
    if out is not None and results:
        from contextlab.host.trace import write_frame

        frames = [r.frame.assign(transcript=r.summary["transcript"]) for r in results]
        write_frame(pd.concat(frames, ignore_index=True), out)
    if args.plot is not None and results:
        from contextlab.cache.plots import plot_calibration

        first = results[0]
        figure = plot_calibration(first.frame, title=f"{first.summary['transcript']} ({first.summary['profile']})")
        figure.savefig(args.plot, dpi=110)
    if args.json:
        for row in summary.to_dict(orient="records"):
            print(json.dumps({k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}))
        return 0 if results else 1
    print(render(summary))
    if len(results) == 1:
        print("\nlargest disagreements:")
        worst = results[0].worst(5)
        shown = ["request", "timestamp", "recorded_total", "recorded_read", "simulated_read", "read_error"]
        print(format_table(worst[[c for c in shown if c in worst.columns]]))
    return 0 if results else 1


def render(summary: pd.DataFrame) -> str:
    """The per-transcript table (shares as percentages)."""
    if "error" in summary and summary["error"].notna().any():
        failed = summary[summary["error"].notna()]
        lines = [f"{r.transcript}: {r.error}" for r in failed.itertuples()]
        summary = summary[summary["error"].isna()]
    else:
        lines = []
    if summary.empty:
        return "\n".join(lines)
    table = pd.DataFrame({label: summary[key] for key, label in TABLE_COLUMNS if key in summary})
    for column in ("recorded", "simulated"):
        table[column] = table[column].map(lambda v: f"{v:.1%}")
    table["error pp"] = table["error pp"].map(lambda v: f"{v:+.1f}")
    table["MAE tokens"] = table["MAE tokens"].map(lambda v: f"{v:,.0f}")
    return "\n".join([format_table(table), *lines])
