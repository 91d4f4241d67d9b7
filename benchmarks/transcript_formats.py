"""Evidence for the importers: every format with a real or spec-built sample, loaded.

Usage: ``python benchmarks/transcript_formats.py [--real DIR]``. Writes each spec-built sample of
``tests/transcripts/transcript_samples.py`` (built from the formats' public definitions) to a
temporary folder, and takes the real recordings in ``DIR`` (default ``$CONTEXTLAB_TRANSCRIPTS`` or
``../shared/transcripts``) folder by folder. Prints a Markdown table: files, conversations,
requests, structural violations, import warnings and load time (the best of 3 loads; timings on a
shared machine are noisy).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the spec-built samples live with the tests

from contextlab.transcripts import TranscriptWarning, load_transcripts  # noqa: E402
from contextlab.transcripts.formats import FORMATS  # noqa: E402
from tests.transcripts.transcript_samples import (  # noqa: E402
    SAMPLES,
    as_claude_trace,
    as_hermes_trajectory,
    render,
    write_hermes_state_db,
)

REAL_SUFFIXES = (".json", ".jsonl", ".traj", ".gz", ".db")


def measure(files: list[Path]) -> dict[str, object]:
    """Load every file (best of 3 for the time) and total what was found."""
    conversations = requests = violations = warned = 0
    formats: set[str] = set()
    best = float("inf")
    for attempt in range(3):
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TranscriptWarning)
            found = [t for path in files for t in load_transcripts(path)]
        best = min(best, time.perf_counter() - started)
        if attempt == 0:
            conversations = len(found)
            requests = sum(t.n_requests for t in found)
            violations = sum(len(t.metadata.get("structural_violations") or []) for t in found)
            warned = sum(1 for w in caught if issubclass(w.category, TranscriptWarning))
            formats = {t.source_format for t in found}
    return {
        "files": len(files),
        "format": ", ".join(sorted(formats)),
        "conversations": conversations,
        "requests": requests,
        "violations": violations,
        "warnings": warned,
        "load_ms": round(best * 1000, 1),
    }


def derived(real: Path, tmp: Path) -> list[tuple[str, str, dict[str, object]]]:
    """Real conversations re-expressed in other formats' shapes: the Claude Code sessions as
    claude-trace captures (every request a full history), tau-bench as Hermes trajectories (id-less
    calls, one repeated provider id in every response)."""
    import json

    rows = []
    sessions = sorted((real / "claude-code").glob("*.jsonl"))
    traces = []
    for k, session in enumerate(sessions):
        for transcript in load_transcripts(session):
            path = tmp / f"claude-trace-{k}.jsonl"
            path.write_text("".join(json.dumps(e) + "\n" for e in as_claude_trace(transcript)))
            traces.append(path)
    if traces:
        rows.append(("claude-code as claude-trace", "derived from real", measure(traces)))
    tau = real / "tau-bench-airline" / "gpt-4o-airline.json"
    if tau.exists():
        path = tmp / "hermes-trajectories.jsonl"
        path.write_text("".join(json.dumps(as_hermes_trajectory(t)) + "\n" for t in load_transcripts(tau)))
        rows.append(("tau-bench as Hermes trajectories", "derived from real", measure([path])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("CONTEXTLAB_TRANSCRIPTS") or str(REPO.parent / "shared" / "transcripts")
    parser.add_argument("--real", default=default, help="folder of real recordings (one sub-folder per source)")
    args = parser.parse_args()
    rows: list[tuple[str, str, dict[str, object]]] = []
    real = Path(args.real)
    if real.is_dir():
        for folder in sorted(p for p in real.iterdir() if p.is_dir()):
            files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(REAL_SUFFIXES))
            if files:
                rows.append((folder.name, "real", measure(files)))
    with tempfile.TemporaryDirectory() as tmp:
        if real.is_dir():
            rows += derived(real, Path(tmp))
        state_db = Path(tmp) / "state.db"
        write_hermes_state_db(state_db)
        rows.append(("hermes-state-db", "spec-built", measure([state_db])))
        for name in sorted(SAMPLES):
            kind, value = SAMPLES[name]
            path = Path(tmp) / f"{name}.{kind}"
            path.write_text(render(kind, value))
            rows.append((name, "spec-built", measure([path])))
    print(f"{len(FORMATS)} format families; {len(rows)} samples\n")
    print("| sample | kind | format | files | conversations | requests | violations | warnings | load ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, kind, m in rows:
        print(
            f"| {name} | {kind} | {m['format']} | {m['files']} | {m['conversations']} | {m['requests']} | "
            f"{m['violations']} | {m['warnings']} | {m['load_ms']} |"
        )


if __name__ == "__main__":
    main()
