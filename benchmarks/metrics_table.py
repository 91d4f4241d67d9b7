"""The per-engine measurement table on one transcript (issue 13 item 9 evidence).

    python benchmarks/metrics_table.py datasets/coding-agent.jsonl.gz --context-length 128000
    python benchmarks/metrics_table.py ../shared/transcripts/claude-code/<id>.jsonl --context-length 200000

Prints one row per engine: compactions, violations, prefix breaks (and their causes), closed-book and
recoverable fact retention, re-fetches, the specific-loss retentions at the final request, summary
faithfulness and the runaway-compaction diagnostics.
"""

from __future__ import annotations

import argparse

import pandas as pd

from contextlab import replay
from contextlab.plugins import list_engines
from contextlab.transcripts import load_transcript

COLUMNS = {
    "compactions": "compact",
    "violations": "viol",
    "prefix_breaks": "breaks",
    "facts": "facts",
    "fact_retention_final": "closed",
    "fact_retention_recoverable_final": "recov",
    "refetch_missing": "refetch",
    "refetch_calls": "redo",
    "identifier_retention_final": "ident",
    "error_retention_final": "errors",
    "artifact_retention_final": "artif",
    "instruction_retention_final": "instr",
    "active_task_retention": "task",
    "summary_unsupported_identifiers": "unsup",
    "summary_status_upgrades": "upgr",
    "diag.compactions_per_hour": "c/h",
    "diag.freed_share_mean": "freed",
    "diag.passes_without_progress": "noprog",
    "diag.never_under_threshold": "stuck",
    "prefix_break_causes": "causes",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcript")
    parser.add_argument("--context-length", type=int, default=128_000)
    parser.add_argument("--engines", default="")
    args = parser.parse_args()
    transcript = load_transcript(args.transcript)
    names = (
        args.engines.split(",")
        if args.engines
        else [i.name for i in list_engines() if i.available is not False and i.source in ("builtin", "bundled")]
    )
    rows = []
    for name in names:
        result = replay(transcript, name, context_length=args.context_length)
        values = {short: result.summary.get(key, float("nan")) for key, short in COLUMNS.items()}
        rows.append({"engine": name, **values})
    table = pd.DataFrame(rows)
    print(f"{transcript.transcript_id}: {transcript.n_requests} requests, facts: {result.summary.get('facts_source')}")
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.precision", 3):
        print(table.to_string(index=False, na_rep="-"))  # "-": no target of that kind in this transcript


if __name__ == "__main__":
    main()
