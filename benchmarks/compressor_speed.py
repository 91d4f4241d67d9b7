"""How long one ``compressor`` compaction of a ~150K-token history takes with the extractive summarizer.

The history is the longest prefix of the generated ``coding-agent`` dataset (``datasets/``) whose
rough size stays under 150,000 tokens, cut at a turn boundary, that the compressor really
compacts. Baselines measured in the same run:
tokenizing the history once with the exact tokenizer (cl100k_base, cold memo) and estimating it
once with the host's rough estimator. Target: a compaction under 1 second.

    python benchmarks/compressor_speed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_TOKENS = 150_000


def history() -> list[dict[str, object]]:
    """The longest turn-aligned prefix under 150K rough tokens that the compressor really compacts.

    Some prefixes are legitimately no-ops for the host's algorithm (after tool-output pruning the
    whole history fits in the protected tail), and timing a no-op would flatter the engine.
    """
    from contextlab.engines.compressor import CompressorEngine
    from contextlab.tokens import RoughCounter
    from contextlab.transcripts import load_transcript

    messages = load_transcript(REPO / "datasets" / "coding-agent.jsonl.gz").messages
    rough = RoughCounter()
    total, cuts = 0, []
    for i, message in enumerate(messages):
        total += rough.message(message)
        if total > TARGET_TOKENS:
            break
        if message.get("role") == "user" and i:
            cuts.append(i)  # a turn boundary: the user ask starts a new turn
    for cut in reversed(cuts):
        engine = CompressorEngine()
        engine.update_model("gpt-4o", 200_000)
        prefix = messages[:cut]
        if engine.compress(prefix) is not prefix:
            return prefix
    raise SystemExit("no prefix of coding-agent under 150K tokens is compactable")


def prose_history() -> list[dict[str, object]]:
    """A worst case for the summarizer: ~150K tokens of user/assistant prose, nothing to prune.

    Built from the dataset's own assistant sentences (cycled), so the text is realistic.
    """
    from contextlab.messages import content_text
    from contextlab.tokens import RoughCounter
    from contextlab.transcripts import load_transcript

    source = load_transcript(REPO / "datasets" / "coding-agent.jsonl.gz").messages
    sentences = [content_text(m) for m in source if m.get("role") == "assistant" and content_text(m).strip()]
    out: list[dict[str, object]] = []
    rough = RoughCounter()
    total, k, turn = 0, 0, 0
    while total < TARGET_TOKENS:
        ask: dict[str, object] = {"role": "user", "content": f"Step {turn}: {sentences[k % len(sentences)][:200]}"}
        reply_parts: list[str] = []
        while sum(map(len, reply_parts)) < 3_000:
            reply_parts.append(sentences[k % len(sentences)])
            k += 1
        reply: dict[str, object] = {"role": "assistant", "content": "\n\n".join(reply_parts)}
        out += [ask, reply]
        total += rough.message(ask) + rough.message(reply)
        turn += 1
    return out


def timed(fn: object, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - started)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from contextlab.engines.compressor import CompressorEngine
    from contextlab.engines.compressor.budgets import _text_tokens
    from contextlab.messages import wire_message
    from contextlab.tokens import ExactCounter, RoughCounter, load_encoding

    messages = history()
    load_encoding("cl100k_base")  # vocabulary loading is not part of any measurement
    exact_tokens = ExactCounter().messages([wire_message(m) for m in messages])
    rough_tokens = RoughCounter().messages(messages)

    def tokenize_once() -> None:
        ExactCounter().messages([wire_message(m) for m in messages])

    def rough_once() -> None:
        RoughCounter().messages(messages)

    prose = prose_history()
    prose_tokens = RoughCounter().messages(prose)
    result: dict[str, object] = {}

    def compact_cold(history: list[dict[str, object]]) -> None:
        _text_tokens.cache_clear()  # no memo carried over from the previous repetition
        engine = CompressorEngine()
        engine.update_model("gpt-4o", 200_000)
        result["out"] = engine.compress(history)

    tokenize = timed(tokenize_once, args.repeat)
    rough = timed(rough_once, args.repeat)
    compact_prose = timed(lambda: compact_cold(prose), args.repeat)
    assert result["out"] is not prose
    compact = timed(lambda: compact_cold(messages), args.repeat)
    out = result["out"]
    assert isinstance(out, list) and out is not messages

    base = statistics.median(tokenize)
    print(f"history: {len(messages)} messages, {exact_tokens:,} exact tokens (cl100k), {rough_tokens:,} rough")
    print(f"after:   {len(out)} messages, {RoughCounter().messages(out):,} rough tokens")
    print(f"prose worst case: {len(prose)} messages, {prose_tokens:,} rough tokens, no tool output to prune")
    print()
    print(f"{'operation':<44}{'median s':>10}{'min s':>10}{'x tokenize':>12}")
    rows = [
        ("exact tokenize once (baseline)", tokenize),
        ("rough estimate once", rough),
        ("compressor compaction, extractive (cold)", compact),
        ("  same, prose worst case", compact_prose),
    ]
    for label, times in rows:
        med = statistics.median(times)
        print(f"{label:<44}{med:>10.3f}{min(times):>10.3f}{med / base:>12.2f}")
    verdict = "PASS" if max(statistics.median(compact), statistics.median(compact_prose)) < 1.0 else "FAIL"
    print(f"\ntarget: compaction < 1 s -> {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
