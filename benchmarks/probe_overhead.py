"""How much the measurement probe adds to a replay (target: at most 30%; issue 13 item 9, 17 item 4).

Replays the same transcript with ``probes=False`` and with the probe, alternating, each replay in a
child forked from the same parent state (a replay run in-process after others inherits the layout of
their freed memory, which moved a 2,420-request plain replay by up to 20% with its position in the
sequence), and prints the best-of-N CPU time of each and the ratio. *cold*: as a single replay of a
file never seen before in a fresh process: the child forgets the probe's targets, row scans and
identifier memo (extraction happens inside the timed replay) and the process-wide content memos of
the engines and the host, for the probed replay and for the plain replay it is compared with (a warm
engine memo in the baseline alone would charge the probe for the engine's own first-sight work),
with the on-disk target store on but empty, so the targets are extracted and stored; *stored*: the
same cold child, but the file was replayed before in another process: its targets are read back from
the store (a second ``contextlab replay`` of the file, a sweep's second worker); *warm*: the parent
has replayed once with the probe, so targets, scans and every memo are warm for both (every further
engine of a sweep on the same parsed transcript). The ``xN`` rows repeat the session N times (605 x
4 = 2,420 requests) to show the per-request cost stays flat. ``--transcript`` measures recorded
sessions instead of the bundled one (a real Claude Code log has mined facts, non-ASCII tool output
and a far smaller replay per megabyte than the generated session). The target (issue 13 item 9) is
at most 1.30 in every column. Timings on the shared machine are noisy; compare ratios from one run,
not seconds.

    python benchmarks/probe_overhead.py [--repeat 3] [--times 4] [--engines passthrough,compressor]
    python benchmarks/probe_overhead.py --context-length 32000 --engines all \
        --transcript ../shared/transcripts/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import shutil
import tempfile
import threading
import time
from typing import Any

from arguments import at_least_one, engine_names, recorded_sessions
from forked import in_fork

from contextlab import load_dataset
from contextlab.api import replay
from contextlab.engines.compressor.budgets import _text_tokens as text_tokens_memo
from contextlab.measure import targets_for
from contextlab.measure.recovery import fact_key
from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE
from contextlab.measure.targets import forget
from contextlab.measure.template import host_texts
from contextlab.textmemo import clear_text_memos
from contextlab.tokens import ExactCounter
from contextlab.tool_arguments import sent_arguments as canonical_arguments_memo
from contextlab.transcripts import GoldFact, Transcript


def repeated(t: Transcript, times: int) -> Transcript:
    """``t`` played ``times`` times in a row (facts and their uses planted in each copy)."""
    n = len(t.messages)
    messages = [copy.deepcopy(m) for _ in range(times) for m in t.messages]
    facts = [
        GoldFact(f"{f.fact_id}#{k}", f.text, f.message_index + k * n, f.category, f.needed_later)
        for k in range(times)
        for f in t.facts
    ]
    uses = {f"{fid}#{k}": [u + k * n for u in v] for k in range(times) for fid, v in t.metadata["fact_uses"].items()}
    return Transcript(
        f"{t.transcript_id}-x{times}",
        messages,
        t.system_prompt,
        list(t.tools),
        facts=facts,
        metadata={"fact_uses": uses},
    )


def cpu(transcript: Transcript, engine: str, probes: bool, run: dict[str, Any]) -> float:
    """Process CPU seconds of one replay in this process (started with no garbage left by the previous one)."""
    gc.collect()
    started = time.process_time()
    replay(transcript, engine, probes=probes, **run)
    return time.process_time() - started


def child_cpu(
    transcript: Transcript, engine: str, probes: bool, run: dict[str, Any], cold: bool, store: str | None = None
) -> float:
    """CPU seconds of one replay in a child forked from this process's current state. ``cold``: the
    child first forgets the transcript's targets and the process-wide content memos; ``store``: the
    target store it reads (None: a new, empty one, as for a file never seen before). The parent's objects are frozen in
    the child, so its full collections scan only the replay's own objects (as ``scale.py`` does)."""

    def measure() -> str:
        # A first sight has the store on but empty: the replay extracts, then writes the store.
        directory = store if store is not None else tempfile.mkdtemp(prefix="probe-overhead-child-")
        os.environ[TARGET_STORE] = directory
        if cold:
            forget(transcript)
            forget_process_memos()
        gc.collect()
        gc.freeze()
        seconds = cpu(transcript, engine, probes, run)
        if store is None:
            shutil.rmtree(directory, ignore_errors=True)
        return repr(seconds)

    ok, report = in_fork(measure)
    if not ok:
        raise SystemExit(f"probe_overhead: the {engine} replay failed in its child: {report}")
    return float(report)


def settle() -> None:
    """Wait for the worker threads of finished replays to exit (a fork copies only the calling thread)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(timeout=5)


def forget_process_memos() -> None:
    """Empty what a fresh process has not computed yet: the engines' text memos and the host's and
    probe's per-content caches (the tokenizer memo is fresh per replay already)."""
    clear_text_memos()
    text_tokens_memo.cache_clear()
    fact_key.cache_clear()
    canonical_arguments_memo.cache_clear()
    host_texts.cache_clear()


def transcripts(parser: argparse.ArgumentParser, paths: list[str], times: int) -> list[Transcript]:
    """The recorded sessions at ``paths``, or the bundled session once and ``times`` times over."""
    if paths:
        return recorded_sessions(parser, paths)
    base = load_dataset("coding-agent")
    return [base, repeated(base, times)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least_one, default=3)
    parser.add_argument("--times", type=at_least_one, default=4)
    parser.add_argument("--engines", default="passthrough,compressor", help="comma-separated names, or all")
    parser.add_argument("--transcript", action="append", default=[], help="a recorded session to measure (repeatable)")
    parser.add_argument("--context-length", type=at_least_one, default=128_000)
    parser.add_argument("--warm-tokens", action="store_true", help="share one tokenizer memo across replays")
    args = parser.parse_args()
    engines = engine_names(parser, args.engines)
    sessions = transcripts(parser, args.transcript, args.times)
    counter = ExactCounter()
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    store = tempfile.mkdtemp(prefix="probe-overhead-")
    # The parent's replays fill this store; only the *stored* children read it.
    os.environ[TARGET_STORE] = store
    print(
        f"{'transcript':<18} {'engine':<12} {'requests':>8} {'no probe':>9} {'cold':>7} {'stored':>7} {'warm':>7}"
        f" {'base cold':>10}"
    )
    for transcript in sessions:
        for engine in engines:
            # A fresh tokenizer memo per replay, as a single `contextlab replay` has (--warm-tokens
            # shares one: then the replay itself is cheaper and the probe's share larger).
            run: dict[str, Any] = {"context_length": args.context_length}
            if args.warm_tokens:
                run["counter"] = counter
            # The parent replays once first: the tokenizer's vocabulary is loaded (process start-up,
            # not a replay's work) and, for the warm pair, targets, scans and memos are warm.
            replay(transcript, engine, probes=True, **run)
            targets_for(transcript)
            settle()
            plain_cold, cold, stored, plain, warm = [], [], [], [], []
            for _ in range(args.repeat):
                plain_cold.append(child_cpu(transcript, engine, False, run, cold=True))
                cold.append(child_cpu(transcript, engine, True, run, cold=True))
                stored.append(child_cpu(transcript, engine, True, run, cold=True, store=store))
                plain.append(child_cpu(transcript, engine, False, run, cold=False))
                warm.append(child_cpu(transcript, engine, True, run, cold=False))
            p, pc = min(plain), min(plain_cold)
            print(
                f"{transcript.transcript_id[:18]:<18} {engine:<12} {transcript.n_requests:>8} {p:>8.2f}s"
                f" {min(cold) / pc:>7.2f} {min(stored) / pc:>7.2f} {min(warm) / p:>7.2f} {pc:>9.2f}s"
            )
    shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
