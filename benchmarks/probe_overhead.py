"""How much the measurement probe adds to a replay (target: at most 30%; issue 13 item 9, 17 item 4).

Replays the same transcript with ``probes=False`` and with the probe, in the same process,
alternating, and prints the best-of-N process CPU time of each and the ratio. *cold*: nothing is
cached (targets, row scans and the identifier memo are forgotten), so extraction happens inside the
timed replay, as in a single replay of a file never seen before; *warm*: extracted once beforehand
(every further engine of a sweep on the same parsed transcript). The ``xN`` rows repeat the session
N times (605 x 4 = 2,420 requests) to show the per-request cost stays flat. The target (issue 13
item 9) is at most 1.30 in both columns. Timings on the shared machine are noisy; compare ratios
from one run, not seconds.

    python benchmarks/probe_overhead.py [--repeat 3] [--times 4] [--engines passthrough,compressor]
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import time
from typing import Any

from contextlab import load_dataset
from contextlab.api import replay
from contextlab.measure import targets_for
from contextlab.measure.targets import forget
from contextlab.tokens import ExactCounter
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
    """Process CPU seconds of one replay (started with no garbage left by the previous one)."""
    gc.collect()
    started = time.process_time()
    replay(transcript, engine, probes=probes, **run)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--times", type=int, default=4)
    parser.add_argument("--engines", default="passthrough,compressor")
    parser.add_argument("--warm-tokens", action="store_true", help="share one tokenizer memo across replays")
    args = parser.parse_args()
    base = load_dataset("coding-agent")
    counter = ExactCounter()
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    print(f"{'transcript':<18} {'engine':<12} {'requests':>8} {'no probe':>9} {'cold':>7} {'warm':>7}")
    for transcript in (base, repeated(base, args.times)):
        for engine in args.engines.split(","):
            # A fresh tokenizer memo per replay, as a single `contextlab replay` has (--warm-tokens
            # shares one: then the replay itself is cheaper and the probe's share larger).
            run: dict[str, Any] = {"context_length": 128_000}
            if args.warm_tokens:
                run["counter"] = counter
                replay(transcript, engine, probes=False, **run)
            plain, cold, warm = [], [], []
            for _ in range(args.repeat):
                plain.append(cpu(transcript, engine, False, run))
                forget(transcript)
                cold.append(cpu(transcript, engine, True, run))
                targets_for(transcript)
                warm.append(cpu(transcript, engine, True, run))
            p = min(plain)
            print(
                f"{transcript.transcript_id:<18} {engine:<12} {transcript.n_requests:>8} {p:>8.2f}s"
                f" {min(cold) / p:>7.2f} {min(warm) / p:>7.2f}"
            )


if __name__ == "__main__":
    main()
