"""``contextlab calibrate`` and ``contextlab replay --cache``, as the docs fragment shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from contextlab.cli import main

SESSION = "claude-code/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"


def test_calibrate_prints_table_and_writes_frame_and_plot(
    shared_transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, plot = tmp_path / "cal.csv", tmp_path / "cal.png"
    code = main(["calibrate", str(shared_transcripts / SESSION), "--out", str(out), "--plot", str(plot)])
    text = capsys.readouterr().out
    assert code == 0
    assert "fa812bfe" in text and "largest disagreements" in text and "error pp" in text
    frame = pd.read_csv(out)
    assert {"recorded_read", "simulated_read", "read_error"} <= set(frame.columns)
    assert plot.stat().st_size > 10_000


def test_calibrate_json_with_provider_and_option(shared_transcripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sorted((shared_transcripts / "mini-swe-agent" / "trajs").glob("*.json"))[0]
    code = main(["calibrate", str(path), "--provider", "gemini:gemini-3-pro", "--option", "hit_prob=1.0", "--json"])
    row = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert code == 0
    assert row["profile"] == "gemini:gemini-3-pro" and row["hit_prob"] == 1.0 and not row["hit_prob_fitted"]
    assert 0 < row["recorded_read_share"] < 1


def test_calibrate_bad_path_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("contextlab: error:") and "missing.jsonl" in err and len(err.splitlines()) == 1


def test_replay_with_several_cache_profiles(shared_transcripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    code = main(
        [
            "replay",
            str(path),
            "--index",
            "3",
            "--cache",
            "anthropic:claude-opus-5-5",
            "--cache",
            "openai:gpt-5.5",
            "--json",
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["cache_profile"] == "anthropic:claude-opus-5-5"
    assert 0.5 < summary["cache_hit_rate"] < 1 and 0.5 < summary["openai.cache_hit_rate"] < 1
    assert summary["cost_usd"] > 0


def test_replay_unknown_cache_provider(shared_transcripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    assert main(["replay", str(path), "--cache", "acme"]) == 2
    assert "unknown cache provider 'acme'" in capsys.readouterr().err


def test_calibrate_transcript_without_usage(shared_transcripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json")]) == 2
    err = capsys.readouterr().err
    assert "no recorded usage to calibrate against" in err and len(err.splitlines()) == 1
