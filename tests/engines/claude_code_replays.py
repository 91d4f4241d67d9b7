"""Replays of the real Claude Code sessions through the ``compressor`` at a 200,000 window.

Run as a script to print the report table::

    CONTEXTLAB_TRANSCRIPTS=/path/to/shared/transcripts python tests/engines/claude_code_replays.py

The logs omit Claude Code's system prompt and tool schemas, so each replay adds a fixed overhead
estimated from the first recorded call: its billed prompt tokens minus the exact tokens of the
messages before it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

WINDOW = 200_000
SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d",
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
)


@dataclass
class SessionReport:
    session: str
    requests: int
    overhead: int
    threshold: int
    violations: int
    first_crossing: int | None
    compactions: pd.DataFrame  # committed passes: request, trigger, prompt before/after (exact), rough
    claude_code: list[tuple[int, int, str, int | None, int | None, int | None]]
    """(message index, request index, trigger, preTokens, recorded prompt and our exact prompt of the
    last request before the boundary)."""
    trace: pd.DataFrame


def estimate_overhead(transcript: object) -> int:
    """Billed prompt tokens of the first recorded call minus the exact tokens of what precedes it."""
    from contextlab.messages import wire_message
    from contextlab.tokens import ExactCounter
    from contextlab.transcripts.model import Transcript

    assert isinstance(transcript, Transcript)
    first = min(transcript.usage)
    counted = ExactCounter().request([wire_message(m) for m in transcript.messages[:first]], [])
    return max(0, transcript.usage[first].prompt_tokens - counted)


def replay_session(path: Path) -> SessionReport:
    import contextlab
    from contextlab.transcripts import load_transcript

    transcript = load_transcript(path)
    overhead = estimate_overhead(transcript)
    result = contextlab.replay(transcript, "compressor", context_length=WINDOW, fixed_overhead_tokens=overhead)
    assert result.status == "ok", result.error
    control = contextlab.replay(transcript, "passthrough", context_length=WINDOW, fixed_overhead_tokens=overhead)
    trace = result.trace
    threshold = int(trace["threshold_tokens"].iloc[0])
    over = control.trace.loc[control.trace["pressure_tokens"] >= threshold, "request"]
    first_crossing = int(over.iloc[0]) if len(over) else None
    passes = result.compactions
    committed = passes[passes["outcome"] == "committed"].copy()
    prompts = trace.set_index("request")["prompt_tokens"]
    committed["prompt_before"] = [int(prompts.get(r - 1, 0)) for r in committed["request"]]
    committed["prompt_after"] = [int(prompts.get(r, 0)) for r in committed["request"]]
    assistants = [i for i, m in enumerate(transcript.messages) if m.get("role") == "assistant"]
    control_prompts = control.trace.set_index("request")["prompt_tokens"]
    events = []
    for event in transcript.events:
        before = [a for a in assistants if a < event.message_index]
        recorded = transcript.usage.get(before[-1]) if before else None
        events.append(
            (
                event.message_index,
                len(before),
                event.trigger,
                event.pre_tokens,
                recorded.prompt_tokens if recorded else None,
                int(control_prompts.get(len(before) - 1, 0)) if before else None,
            )
        )
    return SessionReport(
        session=transcript.transcript_id,
        requests=len(trace),
        overhead=overhead,
        threshold=threshold,
        violations=int(trace["violations"].sum()),
        first_crossing=first_crossing,
        compactions=committed[
            [
                "request",
                "trigger",
                "prompt_before",
                "prompt_after",
                "tokens_before",
                "tokens_after",
                "summary_tokens",
            ]
        ],
        claude_code=events,
        trace=trace,
    )


def main() -> int:
    root = Path(
        os.environ.get("CONTEXTLAB_TRANSCRIPTS", Path(__file__).resolve().parents[3] / "shared" / "transcripts")
    )
    for session in SESSIONS:
        report = replay_session(root / "claude-code" / f"{session}.jsonl")
        print(
            f"{report.session}: requests={report.requests} overhead={report.overhead} "
            f"threshold={report.threshold} violations={report.violations} "
            f"first_crossing={report.first_crossing}"
        )
        for row in report.compactions.itertuples():
            print(
                f"  compressor: request {row.request} ({row.trigger}): prompt {row.prompt_before} -> "
                f"{row.prompt_after} exact; rough {row.tokens_before} -> {row.tokens_after}; "
                f"summary {row.summary_tokens} tokens"
            )
        for message_index, request, trigger, pre, recorded, exact in report.claude_code:
            print(
                f"  claude code: compact_boundary at message {message_index} "
                f"(before request {request}), {trigger}, "
                f"preTokens={pre}; request {request - 1} billed {recorded}, counted {exact} here (cl100k)"
            )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main())
