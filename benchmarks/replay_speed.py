"""Replay speed: host overhead per request, against tokenizing every distinct message once.

Usage: ``python benchmarks/replay_speed.py [PATH] [--repeat N]``

Replays the first half and the whole of a long conversation with ``passthrough`` on a cold token
memo, and compares each replay with the time it takes just to tokenize each distinct message of
the same prefix once (the unavoidable work). A well-designed host stays within a small constant
factor of that baseline, and the factor does not grow with length: the replay is linear.
Without a PATH it uses the largest bundled dataset, ``datasets/coding-agent.jsonl.gz``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from contextlab import ExactCounter, HostSettings, Transcript, load_transcript, replay
from contextlab.messages import content_text, tool_call_arguments, tool_calls
from contextlab.tokens import load_encoding

REPO = Path(__file__).resolve().parent.parent
WINDOW = 100_000_000


def default_transcript() -> Transcript:
    """The largest bundled dataset (a generated coding-agent session)."""
    return load_transcript(REPO / "datasets" / "coding-agent.jsonl.gz")


def prefix(transcript: Transcript, n_requests: int) -> Transcript:
    """The transcript cut after its ``n_requests``-th assistant message and that message's tool results."""
    seen, end = 0, len(transcript.messages)
    for i, message in enumerate(transcript.messages):
        if message.get("role") == "assistant":
            seen += 1
            if seen > n_requests:
                end = i
                break
    return Transcript(
        f"{transcript.transcript_id}[:{n_requests}]",
        transcript.messages[:end],
        transcript.system_prompt,
        transcript.tools,
    )


def tokenize_distinct_once(transcript: Transcript, encoding: str) -> float:
    """Seconds to tokenize every distinct text of the transcript once, with no memo."""
    enc = load_encoding(encoding)
    texts = {transcript.system_prompt or ""}
    for message in transcript.messages:
        texts.add(content_text(message))
        texts.update(tool_call_arguments(c) for c in tool_calls(message))
    started = time.perf_counter()
    for text in texts:
        enc.encode_ordinary(text)
    return time.perf_counter() - started


def measure(transcript: Transcript, repeat: int, encoding: str) -> dict[str, float]:
    replays, baselines = [], []
    for _ in range(repeat):
        baselines.append(tokenize_distinct_once(transcript, encoding))
        started = time.perf_counter()
        # A window no request reaches: passthrough then never enters overflow recovery, so this
        # measures the steady per-request loop (assembly, counting, gates, trace row).
        settings = HostSettings(encoding=encoding, context_length=WINDOW)
        result = replay(transcript, "passthrough", settings, counter=ExactCounter(encoding))
        replays.append(time.perf_counter() - started)
    replay_s, baseline_s = statistics.median(replays), statistics.median(baselines)
    requests = len(result.trace)
    return {
        "requests": requests,
        "prompt_tokens_total": float(result.summary["prompt_tokens_total"]),
        "replay_s": replay_s,
        "tokenize_once_s": baseline_s,
        "overhead_ms_per_request": (replay_s - baseline_s) / requests * 1000,
        "ratio": replay_s / baseline_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="transcript to replay (default: the largest bundled dataset)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per length; the median is reported")
    parser.add_argument("--encoding", default="cl100k_base")
    args = parser.parse_args()
    transcript = load_transcript(args.path) if args.path else default_transcript()
    load_encoding(args.encoding)  # load the vocabulary outside the timed region
    total = transcript.n_requests
    rows = [measure(prefix(transcript, n), args.repeat, args.encoding) for n in (total // 2, total)]
    print(f"transcript: {transcript.transcript_id} ({total} requests), engine passthrough, median of {args.repeat}")
    header = ("requests", "prompt tok", "replay s", "tokenize-once s", "overhead ms/req", "ratio")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (8, 12, 9, 16, 16, 6), strict=True)))
    for row in rows:
        print(
            f"{row['requests']:>8.0f} {row['prompt_tokens_total']:>12,.0f} {row['replay_s']:>9.3f} "
            f"{row['tokenize_once_s']:>16.3f} {row['overhead_ms_per_request']:>16.3f} {row['ratio']:>6.2f}"
        )
    growth = rows[1]["replay_s"] / rows[0]["replay_s"]
    work = rows[1]["tokenize_once_s"] / rows[0]["tokenize_once_s"]
    print(
        f"the whole conversation took {growth:.2f}x the replay time of its first half, for {work:.2f}x the "
        f"tokenization work: the ratio grew {rows[1]['ratio'] / rows[0]['ratio']:.2f}x (a linear host keeps it flat)"
    )


if __name__ == "__main__":
    main()
