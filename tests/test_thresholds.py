"""The threshold knob says what it did: the effective threshold, and one warning when it is clamped."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import contextlab
from contextlab.thresholds import ThresholdClampedWarning, threshold_label, threshold_note, warn_clamped_once

REPO = Path(__file__).resolve().parent.parent


def test_note_names_the_hosts_floor_and_other_engines_own_thresholds() -> None:
    assert (
        threshold_note("compressor", 0.5, 32_000, 27_200) == "threshold_percent 0.5 -> 27,200 tokens: the host's floor"
    )
    assert threshold_note("compressor", 0.9, 128_000, 115_200) is None
    assert threshold_note("compressor", None, 32_000, 27_200) is None  # the engine's own default: nothing to say
    assert threshold_note("lcm", 0.5, 100_000, 75_000) == (
        "threshold_percent 0.5 -> 75,000 tokens: lcm sets its own threshold (it does not use threshold_percent)"
    )
    assert threshold_label(27_200, 32_000) == "27,200 tokens (85% of 32,000)"


def test_warning_is_issued_once_per_note() -> None:
    note = "threshold_percent 0.123 -> 1 tokens: test"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_clamped_once(note) is True
        assert warn_clamped_once(note) is False
    assert [str(w.message) for w in caught if w.category is ThresholdClampedWarning] == [note]


def test_replay_summary_carries_the_note_and_the_clamped_threshold() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = contextlab.replay(
            "datasets/coding-agent-short.jsonl.gz", "compressor", context_length=32_000, threshold_percent=0.5
        )
    assert result.summary["threshold_tokens"] == 27_200 and result.summary["threshold_percent"] == 0.5
    assert result.summary["threshold_note"] == "threshold_percent 0.5 -> 27,200 tokens: the host's floor"
    assert result.summary["threshold_note"] in result.warnings


def test_cli_prints_the_effective_threshold_and_one_warning_line() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "contextlab.cli",
            "replay",
            "datasets/coding-agent-short.jsonl.gz",
            "--engine",
            "compressor",
            "--context-length",
            "32000",
            "--threshold-percent",
            "0.5",
            "--cache",
            "anthropic:claude-sonnet-5-5",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stderr.strip() == "contextlab: warning: threshold_percent 0.5 -> 27,200 tokens: the host's floor"
    lines = proc.stdout.splitlines()
    assert any(line.split() == ["model", "gpt-4o"] or line.strip().startswith("model ") for line in lines)
    assert any(
        "threshold (effective)" in line and "27,200 tokens (85% of 32,000), the host's floor" in line for line in lines
    )
    assert any(
        line.strip().startswith("cache anthropic:claude-sonnet-5-5") and "hit rate" in line and "cost $" in line
        for line in lines
    )
    assert all(len(line) <= 100 for line in lines)
