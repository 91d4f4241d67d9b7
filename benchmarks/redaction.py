"""What secret redaction costs: contextlab's implementation of the host's rules, timed on every
distinct message and tool-call text of the given transcripts, against the host's own
``redact_sensitive_text`` in the same run when the host is installed (``pip install
'contextlab[hermes]'``, e.g. the suite's ``.hermes-venv``), which also checks that both give the same
text for every one.

    python benchmarks/redaction.py [PATH ...] [--repeat 3]
    .hermes-venv/bin/python benchmarks/redaction.py ../shared/transcripts datasets

A PATH is a transcript file or a directory searched for ``*.json``, ``*.jsonl`` and ``*.gz`` files
(files that are not transcripts are skipped). Without PATH: the bundled datasets.
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Callable
from pathlib import Path

from arguments import at_least_one

from contextlab.errors import TranscriptError
from contextlab.messages import content_text, tool_calls
from contextlab.redact import redact_uncached
from contextlab.transcripts import load_transcripts

REPO = Path(__file__).resolve().parent.parent


def transcript_files(paths: list[Path]) -> list[Path]:
    """The files named, and the transcript-like files under each directory named, in order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for pattern in ("*.json", "*.jsonl", "*.gz") for p in path.rglob(pattern))
        else:
            found.append(path)
    return found


def distinct_texts(files: list[Path]) -> tuple[list[str], int]:
    """Every distinct non-empty message and tool-call argument text, and how many files were read."""
    texts: dict[str, None] = {}
    read = 0
    for path in files:
        try:
            transcripts = load_transcripts(path)
        except TranscriptError:
            continue  # not a transcript (a results table beside the logs)
        read += 1
        for transcript in transcripts:
            for message in transcript.messages:
                texts[content_text(message)] = None
                for call in tool_calls(message):
                    texts[str((call.get("function") or {}).get("arguments", ""))] = None
    texts.pop("", None)
    return list(texts), read


def best_time(redact: Callable[[str], str], texts: list[str], repeat: int) -> tuple[float, list[str]]:
    """Best-of-``repeat`` CPU seconds of redacting every text, and the redacted texts."""
    best, out = float("inf"), []
    for _ in range(repeat):
        started = time.process_time()
        out = [redact(text) for text in texts]
        best = min(best, time.process_time() - started)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="transcript files or directories")
    parser.add_argument("--repeat", type=at_least_one, default=3, help="timed passes; the best is reported")
    args = parser.parse_args()
    paths = args.paths or [REPO / "datasets"]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    texts, read = distinct_texts(transcript_files(paths))
    if not texts:
        parser.error("no transcript text found in " + ", ".join(map(str, paths)))
    megabytes = sum(map(len, texts)) / 1e6
    print(f"{len(texts):,} distinct texts ({megabytes:.1f} M characters) from {read} transcript files")
    ours, redacted = best_time(redact_uncached, texts, args.repeat)
    print(f"contextlab  {ours:7.3f} s  ({sum(r != t for r, t in zip(redacted, texts, strict=True)):,} texts masked)")
    try:
        host_module = importlib.import_module("agent.redact")  # the real host, when installed
    except ImportError:
        print("host        not installed (pip install 'contextlab[hermes]' to compare)")
        return
    host, expected = best_time(host_module.redact_sensitive_text, texts, args.repeat)
    differ = sum(a != b for a, b in zip(redacted, expected, strict=True))
    print(f"host        {host:7.3f} s  ({host / ours:.1f}x contextlab's time); texts redacted differently: {differ}")


if __name__ == "__main__":
    main()
