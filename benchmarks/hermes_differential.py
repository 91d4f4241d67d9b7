"""Where contextlab's ``compressor`` and the real Hermes ``ContextCompressor`` decide differently.

Replays each transcript through ``compressor`` (contextlab's port) and ``hermes.compressor`` (the
installed Hermes package's own compressor, summaries by the same offline summarizer) with the same
host settings, and lists, request by request, where the decisions differ (compaction, its trigger,
a committed prune) and where the prompt tokens differ. After the first differing decision the two
histories differ, so every later token difference follows from it: the first divergence is the one
to explain (an upstream version change between the installed release and the source the port
follows, or a port bug to fix).

Attribution: the port is replayed twice, with its default rules (upstream ``0000416b`` plus the
newer upstream rules, ``docs/compressor.md``) and with ``hermes_rules="0.19.0"``, which switches every
rule listed as a version change in ``docs/compressor.md`` back to the 0.19.0 behaviour. A difference
that disappears under ``0.19.0`` rules is explained by those version changes; one that remains is
unexplained (a port bug or an unlisted change) and is listed request by request.

Usage (needs a Hermes package: ``pip install 'contextlab[hermes]'``, e.g. the suite's
``.hermes-venv``)::

    .hermes-venv/bin/python benchmarks/hermes_differential.py [PATH ...] [--context-length N]
        [--rules newest|0.19.0|both] [--out FILE.csv] [--no-session-store]

Without PATH it replays the bundled datasets, each at the window the test suite uses.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

import pandas as pd

from contextlab import load_transcript, replay
from contextlab.engines.hermes_compressor import ENGINE_NAME, is_available
from contextlab.host import HostSettings

DEFAULT_RUNS = (
    ("datasets/coding-agent-short.jsonl.gz", 16_000),
    ("datasets/support-agent.jsonl.gz", 64_000),
    ("datasets/coding-agent.jsonl.gz", 128_000),
)
DECISION_COLUMNS = ("compressed", "compress_trigger", "pruned")


def compare(path: str, context_length: int, hermes_rules: str = "newest", session_store: bool = True) -> pd.DataFrame:
    """One row per request: both engines' decisions and prompt tokens, and what differs.

    ``hermes_rules`` is the port's rule generation (``"newest"`` or ``"0.19.0"``); ``session_store``
    the host setting (the CLI's session store, whose ``commit_memory_session`` ends each compacted
    session for the engine)."""
    transcript = load_transcript(path)
    settings = HostSettings(context_length=context_length, session_store=session_store)
    frames = {}
    runs = (("compressor", {"hermes_rules": hermes_rules}), (ENGINE_NAME, None))
    for engine, params in runs:
        result = replay(transcript, engine, settings, params=params)
        if result.status != "ok":
            raise SystemExit(f"{path}: {engine} failed: {result.summary.get('error')}")
        frames[engine] = result.trace.set_index("request")
    port, real = frames["compressor"], frames[ENGINE_NAME]
    rows = pd.DataFrame({"transcript": transcript.transcript_id, "rules": hermes_rules, "turn": port["turn"]})
    for column in (*DECISION_COLUMNS, "prompt_tokens"):
        rows[f"port_{column}"] = port[column]
        rows[f"hermes_{column}"] = real[column]
    decided = [(port[c].fillna("") != real[c].fillna("")) for c in DECISION_COLUMNS]
    rows["decision_differs"] = pd.concat(decided, axis=1).any(axis=1)
    rows["token_delta"] = port["prompt_tokens"] - real["prompt_tokens"]
    return rows.reset_index()


def describe(rows: pd.DataFrame) -> str:
    """The summary block for one transcript: counts, the first divergence, every differing decision."""
    name = rows["transcript"].iloc[0]
    decisions = rows[rows["decision_differs"]]
    tokens = rows[rows["token_delta"] != 0]
    lines = [
        f"{name} (port rules {rows['rules'].iloc[0]}): {len(rows)} requests; "
        f"decisions differ at {len(decisions)}, prompt tokens at {len(tokens)}",
        f"  compactions: port {int(rows['port_compressed'].sum())}, hermes {int(rows['hermes_compressed'].sum())}; "
        f"prunes: port {int(rows['port_pruned'].sum())}, hermes {int(rows['hermes_pruned'].sum())}",
    ]
    if len(decisions):
        lines.append(f"  first decision difference: request {decisions.iloc[0]['request']}")
    if len(tokens):
        first = tokens.iloc[0]
        lines.append(
            f"  first token difference: request {first['request']} "
            f"(port {first['port_prompt_tokens']:,}, hermes {first['hermes_prompt_tokens']:,})"
        )
    shown = ["request", "turn", *(f"{side}_{c}" for c in DECISION_COLUMNS for side in ("port", "hermes"))]
    if len(decisions):
        lines.append("  differing decisions:")
        lines += ["    " + line for line in decisions[shown].to_string(index=False).splitlines()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="transcripts (default: the bundled datasets)")
    parser.add_argument("--context-length", type=int, default=None, help="window for every PATH (default 128000)")
    parser.add_argument(
        "--rules",
        choices=("newest", "0.19.0", "both"),
        default="both",
        help="the port's rule generation (both: newest, then 0.19.0 to attribute the differences)",
    )
    parser.add_argument("--out", default=None, help="write every request's comparison to this CSV file")
    parser.add_argument(
        "--no-session-store",
        action="store_true",
        help="replay a host without a session store (a bare AIAgent: no on_session_end at each compaction)",
    )
    args = parser.parse_args()
    available, why = is_available()
    if not available:
        print(f"hermes_differential: error: {why}", file=sys.stderr)
        return 2
    runs = [(p, args.context_length or 128_000) for p in args.paths] or [
        (p, args.context_length or w) for p, w in DEFAULT_RUNS
    ]
    print(f"hermes-agent {metadata.version('hermes-agent')} vs contextlab {metadata.version('contextlab')}")
    generations = ("newest", "0.19.0") if args.rules == "both" else (args.rules,)
    frames = []
    for path, window in runs:
        for generation in generations:
            rows = compare(path, window, generation, session_store=not args.no_session_store)
            frames.append(rows)
            print(f"\n[window {window:,}] " + describe(rows))
    if args.out:
        pd.concat(frames).to_csv(Path(args.out), index=False)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
