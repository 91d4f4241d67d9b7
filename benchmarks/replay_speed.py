"""Replay speed: host overhead per request, against tokenizing every distinct message once.

Usage: ``python benchmarks/replay_speed.py [PATH] [--repeat N]``

Replays the first half and the whole of a long conversation with ``passthrough`` on a cold token
memo, and compares each replay with the time it takes just to tokenize each distinct message of
the same prefix once (the unavoidable work). A well-designed host stays within a small constant
factor of that baseline, and the factor does not grow with length: the replay is linear.
Without a PATH it uses the largest bundled dataset, ``datasets/coding-agent.jsonl.gz``.

It then replays every real Claude Code session under ``$CONTEXTLAB_TRANSCRIPTS/claude-code`` (or
``../shared/transcripts``; ``--sessions DIR``, ``--no-sessions`` to skip) and a repetition of the worst
one to about 2,000 requests (``--long N``), in CPU seconds, each with its ratio to its own floor
(target: within 2x), then the subagent sidechains stored beside them. CPU time is used there because
the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from contextlab import ExactCounter, HostSettings, Transcript, load_transcript, replay
from contextlab.host.observers import RequestView
from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE
from contextlab.messages import content_text, tool_call_arguments, tool_calls
from contextlab.tokens import load_encoding
from contextlab.tool_arguments import sent_arguments as canonical_arguments_memo

# Timed as a first sight: a transcript's probe targets are extracted, not read back from the on-disk
# target store (which a rerun would otherwise find filled); set the variable to time the store.
os.environ.setdefault(TARGET_STORE, "off")

REPO = Path(__file__).resolve().parent.parent
WINDOW = 100_000_000
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/scaling.py
SESSIONS = Path(os.environ.get("CONTEXTLAB_TRANSCRIPTS", REPO.parent / "shared" / "transcripts")) / "claude-code"


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
    """CPU seconds to tokenize every distinct text of the transcript once, with no memo (CPU time, as
    the session report: wall time on a shared machine swung the ratio between 0.7 and 2.7)."""
    enc = load_encoding(encoding)
    texts = {transcript.system_prompt or ""}
    for message in transcript.messages:
        texts.add(content_text(message))
        texts.update(tool_call_arguments(c) for c in tool_calls(message))
    started = time.process_time()
    for text in texts:
        enc.encode_ordinary(text)
    return time.process_time() - started


def measure(transcript: Transcript, repeat: int, encoding: str) -> dict[str, float]:
    replays, baselines = [], []
    for _ in range(repeat):
        baselines.append(tokenize_distinct_once(transcript, encoding))
        canonical_arguments_memo.cache_clear()
        started = time.process_time()
        # A window no request reaches: passthrough then never enters overflow recovery, so this
        # measures the steady per-request loop (assembly, counting, gates, trace row).
        settings = HostSettings(encoding=encoding, context_length=WINDOW)
        result = replay(transcript, "passthrough", settings, counter=ExactCounter(encoding))
        replays.append(time.process_time() - started)
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
    parser.add_argument("--sessions", type=Path, default=SESSIONS, help="folder of Claude Code sessions")
    parser.add_argument("--no-sessions", action="store_true", help="skip the real-session report")
    parser.add_argument("--long", type=int, default=2000, help="requests of the worst session's repetition")
    args = parser.parse_args()
    transcript = load_transcript(args.path) if args.path else default_transcript()
    load_encoding(args.encoding)  # load the vocabulary outside the timed region
    total = transcript.n_requests
    rows = [measure(prefix(transcript, n), args.repeat, args.encoding) for n in (total // 2, total)]
    print(f"transcript: {transcript.transcript_id} ({total} requests), engine passthrough, median of {args.repeat}")
    header = ("requests", "prompt tok", "replay cpu s", "tokenize-once s", "overhead ms/req", "ratio")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (8, 12, 12, 16, 16, 6), strict=True)))
    for row in rows:
        print(
            f"{row['requests']:>8.0f} {row['prompt_tokens_total']:>12,.0f} {row['replay_s']:>12.3f} "
            f"{row['tokenize_once_s']:>16.3f} {row['overhead_ms_per_request']:>16.3f} {row['ratio']:>6.2f}"
        )
    growth = rows[1]["replay_s"] / rows[0]["replay_s"]
    work = rows[1]["tokenize_once_s"] / rows[0]["tokenize_once_s"]
    print(
        f"the whole conversation took {growth:.2f}x the replay time of its first half, for {work:.2f}x the "
        f"tokenization work: the ratio grew {rows[1]['ratio'] / rows[0]['ratio']:.2f}x (a linear host keeps it flat)"
    )
    if not args.no_sessions:
        report_sessions(args.sessions, args.encoding, args.long, args.repeat)


class _Recorder:
    """An encoding stand-in that records the texts it is asked to encode (nothing is tokenized)."""

    def __init__(self) -> None:
        self.texts: set[str] = set()

    def encode_ordinary(self, text: str) -> list[int]:
        self.texts.add(text)
        return []


class _SentTexts:
    """Observer: every distinct text the requests carry, as the exact counter would tokenize them."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.counter = ExactCounter(encoding)
        self.recorder = _Recorder()
        self.counter._encoding = self.recorder  # type: ignore[assignment]  # counts nothing: only the text selection is used
        self.seen: set[int] = set()

    def columns(self) -> list[str]:
        return []

    def observe(self, view: RequestView) -> dict[str, Any]:
        for message in view.messages[view.prefix_messages :]:
            if id(message) not in self.seen:
                self.seen.add(id(message))
                self.counter.message(message)
        self.counter.tools(view.tools)
        return {}

    def summary(self) -> dict[str, Any]:
        return {}

    def clone(self) -> _SentTexts:
        return self  # one replay only: the benchmark reads the texts afterwards


def sent_texts(transcript: Transcript, encoding: str) -> set[str]:
    """The distinct texts of the requests as sent (merged user rows, tool schemas, ids included): what
    the host has to tokenize at least once to count every request exactly."""
    recorder = _SentTexts(encoding)
    settings = HostSettings(encoding=encoding, context_length=WINDOW)
    replay(transcript, "passthrough", settings, observers=[recorder], probes=False)
    return recorder.recorder.texts


def encode_once_cpu(texts: set[str], encoding: str) -> float:
    """CPU seconds of one ``encode_ordinary`` pass over ``texts`` (the encoding object the host uses)."""
    enc = load_encoding(encoding)
    started = time.process_time()
    for text in texts:
        enc.encode_ordinary(text)
    return time.process_time() - started


def replay_cpu(transcript: Transcript, encoding: str, probes: bool) -> float:
    """CPU seconds of one passthrough replay on a cold token memo (and cold process-wide memos)."""
    canonical_arguments_memo.cache_clear()  # an earlier replay in this process must not help this one
    started = time.process_time()
    replay(
        transcript,
        "passthrough",
        HostSettings(encoding=encoding, context_length=WINDOW),
        counter=ExactCounter(encoding),
        probes=probes,
    )
    return time.process_time() - started


def session_row(transcript: Transcript, encoding: str, repeat: int) -> dict[str, float]:
    """Replay and floors of one session, each the best of ``repeat`` in this process (same treatment
    for both sides: warm interpreter, same encoding object, CPU time)."""
    from scaling import tokenize_distinct_once

    floor = min(tokenize_distinct_once(transcript, encoding) for _ in range(repeat))
    sent = sent_texts(transcript, encoding)
    floor_sent = min(encode_once_cpu(sent, encoding) for _ in range(repeat))
    host = min(replay_cpu(transcript, encoding, probes=False) for _ in range(repeat))
    probed = min(replay_cpu(transcript, encoding, probes=True) for _ in range(repeat))
    return {
        "requests": transcript.n_requests,
        "host_s": host,
        "floor_s": floor,
        "ratio": host / floor,
        "floor_sent_s": floor_sent,
        "ratio_sent": host / floor_sent,
        "probes_s": probed,
        "probes_ratio": probed / floor,
    }


def report_sessions(folder: Path, encoding: str, long_requests: int, repeat: int) -> None:
    """Every real Claude Code session, then the worst one repeated to about ``long_requests``."""
    from scaling import repeat_transcript

    paths = sorted(folder.glob("*-*-*-*-*.jsonl"))
    if not paths:
        print(f"no Claude Code sessions under {folder}")
        return
    print(
        f"\nreal Claude Code sessions ({folder}), passthrough, CPU seconds, best of {repeat} "
        "(target: host within 2x the floor)"
    )
    print(
        "host: replay without probes; floor: one encode pass over each distinct transcript text; "
        "sent floor: over each distinct text of the requests as sent (merged user rows, tool schemas, ids)"
    )
    header = ("session", "requests", "host s", "floor s", "ratio", "sent floor s", "ratio", "+probes s", "ratio")
    widths = (12, 9, 8, 9, 7, 13, 7, 10, 7)
    print("".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    worst: tuple[float, Transcript] | None = None
    for path in paths:
        transcript = load_transcript(path)
        row = session_row(transcript, encoding, repeat)
        _print_row(path.name[:8], row, widths)
        if worst is None or row["ratio"] > worst[0]:
            worst = (row["ratio"], transcript)
    assert worst is not None
    base = worst[1]
    times = max(1, round(long_requests / max(1, base.n_requests)))
    _print_row(
        f"{base.transcript_id[:4]}x{times}", session_row(repeat_transcript(base, times), encoding, repeat), widths
    )
    report_sidechains(paths, encoding, repeat, widths)


def report_sidechains(paths: list[Path], encoding: str, repeat: int, widths: tuple[int, ...]) -> None:
    """The subagent sidechains Claude Code keeps beside each session (``<session>/subagents/``): real
    sessions too, but of 3 to 13 requests, where the replay's fixed cost is most of the floor."""
    sidechains = [(p, s) for p in paths for s in sorted((p.parent / p.stem / "subagents").glob("*.jsonl"))]
    rows = [(f"{p.name[:4]}/{s.stem[-6:]}", t) for p, s in sidechains if (t := load_transcript(s)).n_requests >= 2]
    if not rows:
        return
    from scaling import tokenize_distinct_once as floor_cpu

    one = prefix(load_transcript(paths[0]), 1)
    fixed = min(replay_cpu(one, encoding, probes=False) for _ in range(repeat)) - min(
        floor_cpu(one, encoding) for _ in range(repeat)
    )
    print(
        f"\nsubagent sidechains (2+ requests): a replay costs about {fixed * 1000:.1f} ms more than its floor "
        "before its first request (setup, trace frame, summary: a one-request replay), most of these floors"
    )
    for name, transcript in rows:
        _print_row(name, session_row(transcript, encoding, repeat), widths)


def _print_row(name: str, row: dict[str, float], widths: tuple[int, ...]) -> None:
    cells = [
        f"{row['requests']:.0f}",
        f"{row['host_s']:.3f}",
        f"{row['floor_s']:.3f}",
        f"{row['ratio']:.2f}",
        f"{row['floor_sent_s']:.3f}",
        f"{row['ratio_sent']:.2f}",
        f"{row['probes_s']:.3f}",
        f"{row['probes_ratio']:.2f}",
    ]
    print(f"{name:<{widths[0]}}" + "".join(f"{c:>{w}}" for c, w in zip(cells, widths[1:], strict=True)), flush=True)


if __name__ == "__main__":
    main()
