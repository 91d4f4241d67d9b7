"""``contextlab report TRACE.csv|parquet [--out report.html]``: a self-contained HTML report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextlab.report import REPORT_FRAMES, load_frame, sibling_frames, write_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("report", help="HTML report from trace files", description=__doc__)
    parser.add_argument(
        "trace", metavar="TRACE", help="trace file (.csv or .parquet), e.g. from contextlab bench --out"
    )
    parser.add_argument(
        "--compactions",
        default=None,
        metavar="FILE",
        help="compaction events (default: the compactions file beside TRACE)",
    )
    parser.add_argument(
        "--summary", default=None, metavar="FILE", help="run summaries (default: the summary file beside TRACE)"
    )
    parser.add_argument("--out", default="report.html", metavar="FILE", help="output HTML file (default report.html)")
    parser.add_argument("--title", default="contextlab report", help="page title")
    parser.add_argument(
        "--max-transcripts",
        type=int,
        default=8,
        metavar="N",
        help="transcripts with their own figures (default 8)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    siblings = sibling_frames(args.trace)
    trace = load_frame(args.trace)
    compactions_path = args.compactions or siblings.get("compactions")
    summary_path = args.summary or siblings.get("summary")
    compactions = load_frame(compactions_path) if compactions_path else None
    summaries = load_frame(summary_path) if summary_path else None
    frames = {name: load_frame(siblings[name]) for name in REPORT_FRAMES if name in siblings}
    config = Path(args.trace).with_name("config.yaml")  # what contextlab bench --out saved beside it
    out = write_report(
        Path(args.out),
        trace,
        compactions,
        summaries,
        title=args.title,
        max_transcripts=args.max_transcripts,
        config=config.read_text(encoding="utf-8") if config.is_file() else None,
        frames=frames or None,
    )
    print(f"report written to {out}")
    return 0
