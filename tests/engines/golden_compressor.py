"""Golden per-request traces of the ``compressor`` on a bundled transcript.

The cases replay generated datasets that ship with the repository (``datasets/``), so the goldens
depend only on committed files. Only deterministic columns are stored (the host's timing columns
are dropped). Regenerate after an intended behaviour change with::

    python tests/engines/golden_compressor.py

and review the diff of ``tests/testdata/compressor_*.csv`` before committing it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
TESTDATA = REPO / "tests" / "testdata"


@dataclass(frozen=True)
class GoldenCase:
    name: str
    dataset: str
    context_length: int
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def trace_path(self) -> Path:
        return TESTDATA / f"compressor_{self.name}_trace.csv"

    @property
    def compactions_path(self) -> Path:
        return TESTDATA / f"compressor_{self.name}_compactions.csv"


CASES = (GoldenCase("support_agent_64k", "support-agent", 64_000),)


def deterministic_csv(frame: pd.DataFrame) -> str:
    """The frame as CSV text without the wall-time columns."""
    from contextlab.host.trace import TIMING_COLUMNS

    kept = [c for c in frame.columns if c not in TIMING_COLUMNS]
    return str(frame[kept].to_csv(index=False, lineterminator="\n"))


def render(case: GoldenCase) -> tuple[str, str]:
    """(trace CSV, compactions CSV) of a fresh replay of ``case``."""
    import contextlab
    from contextlab.transcripts import load_transcript

    transcript = load_transcript(REPO / "datasets" / f"{case.dataset}.jsonl.gz")
    result = contextlab.replay(transcript, "compressor", context_length=case.context_length, params=case.params)
    assert result.status == "ok", result.error
    return deterministic_csv(result.trace), deterministic_csv(result.compactions)


def main() -> int:
    for case in CASES:
        trace, compactions = render(case)
        case.trace_path.write_text(trace, encoding="utf-8")
        case.compactions_path.write_text(compactions, encoding="utf-8")
        print(f"wrote {case.trace_path} and {case.compactions_path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
