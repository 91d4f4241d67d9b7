"""``contextlab replay PATH --engine NAME``: replay one transcript and summarize it."""

from __future__ import annotations

import argparse
from typing import Any

from contextlab import schema
from contextlab.api import replay
from contextlab.cache.observer import priced_observers
from contextlab.cli.common import (
    add_host_options,
    add_plugin_options,
    check_output_path,
    configured_run,
)
from contextlab.errors import ConfigError
from contextlab.host.trace import HOST_LOOP_COUNTS, TIMING_COLUMNS, summary_json
from contextlab.progress import LONG_REPLAY_REQUESTS, ReplayProgress
from contextlab.replay_files import write_replay
from contextlab.transcripts import load_transcript
from contextlab.transcripts.facts import load_facts

SUMMARY_FIELDS = [  # (summary column, label): tests/test_schema.py checks each is declared
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
    parser.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="write the per-request trace (.csv or .parquet) and every other frame beside it as FILE-stem.<frame>.ext",
    )
    parser.add_argument("--json", action="store_true", help="print the run summary as one JSON object")
    parser.add_argument(
        "--facts",
        default=None,
        metavar="FILE",
        help="gold facts to probe for retention (JSON Lines sidecar; see docs/transcripts.md)",
    )
    parser.add_argument(
        "--no-timing",
        action="store_true",
        help="leave the wall-time columns out of --out and --json, so repeated runs give identical bytes",
    )
    parser.add_argument(
        "--cache",
        action="append",
        default=[],
        metavar="PROVIDER[:MODEL]",
        help="simulate prompt caching for this provider (repeatable; the first owns the plain columns)",
    )
    parser.add_argument("--cache-policy", default="system_and_3", help="marker policy (default system_and_3)")
    parser.add_argument(
        "--no-probes",
        dest="probes",
        action="store_false",
        help="skip the measurement probe: no retention, loss and break-cause columns or frames (a faster replay)",
    )
    add_host_options(parser)
    add_plugin_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.facts is not None and not args.probes:
        raise ConfigError("--facts gives the measurement probe its facts: drop --no-probes to use it")
    out = check_output_path(args.out)
    transcript = load_transcript(args.path, args.index)
    if args.facts is not None:
        transcript.facts = load_facts(args.facts, transcript)
    observers = priced_observers(args.cache, args.cache_policy)
    (engine,), settings, params = configured_run(args, [args.engine] if args.engine else [])
    if not args.json and transcript.n_requests >= LONG_REPLAY_REQUESTS:
        observers.append(ReplayProgress(f"replay {engine}"))
    result = replay(transcript, engine, settings, params=params, observers=observers, probes=args.probes)
    if args.no_timing:
        result.trace = result.trace.drop(columns=[c for c in result.trace.columns if c in TIMING_COLUMNS])
        result.compactions = result.compactions.drop(columns=[c for c in result.compactions if c in TIMING_COLUMNS])
        result.summary = {k: v for k, v in result.summary.items() if k not in TIMING_COLUMNS}
    written = write_replay(result, out) if out is not None else {}
    if args.json:
        print(summary_json(result.summary))
    else:
        print(render_summary(result.summary))
        if out is not None:
            others = ", ".join(p.name for name, p in written.items() if name != "trace")
            print(f"trace written to {out} ({len(result.trace)} rows); beside it: {others}")
    return 0 if result.status == "ok" else 1


def render_summary(summary: dict[str, Any]) -> str:
    """A two-column human summary of one run: setup (model, window, effective threshold), the
    measurements, and one row per cache profile with its hit rate and cost."""
    params = summary.get("params")
    head = f"{summary['transcript']} x {summary['engine']}" + (f" ({params})" if params else "")
    rows = [{"metric": label, "value": value} for label, value in setup_rows(summary)]
    for key, label in SUMMARY_FIELDS:
        value = summary.get(key)
        rows.append({"metric": label, "value": schema.format_value(key, value)})
    for key in ("fact_retention_mean", "fact_retention_final"):
        if key in summary:
            rows.append({"metric": key.replace("_", " "), "value": schema.format_value(key, summary[key])})
    rows.extend({"metric": label, "value": value} for label, value in cache_rows(summary))
    for key in HOST_LOOP_COUNTS:  # shown only when something happened (docs/host-loop.md)
        if summary.get(key):
            rows.append({"metric": key.replace("_", " "), "value": f"{summary[key]:,}"})
    if summary.get("status") != "ok":
        rows.append({"metric": "status", "value": f"FAILED: {summary.get('error')}"})
    width = max(len(r["metric"]) for r in rows)
    return "\n".join([head, *(f"  {r['metric']:<{width}}  {r['value']}" for r in rows)])


def setup_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """Model, window and the effective threshold (with why it differs from the setting)."""
    from contextlab.thresholds import MINIMUM_CONTEXT_LENGTH, threshold_label

    window = int(summary.get("context_length") or 0)
    size = f"{window:,}"
    if summary.get("window_note"):
        size += f" (under the real host's minimum, {MINIMUM_CONTEXT_LENGTH:,})"
    rows = [("model", str(summary.get("model") or "?")), ("context length", size)]
    if "threshold_tokens" in summary:
        note = str(summary.get("threshold_note") or "")
        label = threshold_label(int(summary["threshold_tokens"]), window)
        if note:
            label += f", {note.partition(': ')[2]}"
        elif summary.get("threshold_percent") is not None:
            label += f", threshold_percent {summary['threshold_percent']:g}"
        rows.append(("threshold (effective)", label))
    return rows


def cache_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """One row per simulated cache profile, by name: hit rate, write share and cost."""
    rows = []
    for key in [k for k in summary if k == "cache_profile" or k.endswith(".cache_profile")]:
        prefix = key[: -len("cache_profile")]
        rate = summary.get(f"{prefix}cache_hit_rate")
        cost = summary.get(f"{prefix}cost_usd")
        parts = []
        if rate is not None:
            parts.append(f"hit rate {rate:.1%}")
        if cost is not None and cost == cost:  # NaN: the model has no price row
            parts.append(f"cost ${cost:,.4f}")
        rows.append((f"cache {summary[key]}", ", ".join(parts)))
    if rows and summary.get("cache_policy"):
        rows.append(("cache markers", str(summary["cache_policy"])))
    return rows
