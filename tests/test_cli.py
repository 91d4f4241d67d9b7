"""The CLI: readable summaries, JSON, trace files, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from contextlab.cli import main
from contextlab.examples import tool_conversation
from contextlab.transcripts import save_transcript

SUMMARY_KEYS = {
    "requests",
    "turns",
    "compactions",
    "prompt_tokens_total",
    "prompt_tokens_max",
    "prefix_tokens_total",
    "violations",
    "overflows",
    "engine",
    "transcript",
}


@pytest.fixture()
def transcript_file(tmp_path: Path) -> Path:
    path = tmp_path / "synthetic.jsonl"
    save_transcript(tool_conversation(4), path)
    return path


def test_replay_prints_a_readable_summary(transcript_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(transcript_file)]) == 0
    out = capsys.readouterr().out
    assert "synthetic x passthrough" in out
    assert "prompt tokens (peak)" in out


def test_replay_json_has_the_required_keys(transcript_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["replay", str(transcript_file), "--json", "--context-length", "64000", "--threshold-percent", "0.5"]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert set(summary) >= SUMMARY_KEYS
    assert summary["requests"] == 8 and summary["turns"] == 4
    assert summary["threshold_tokens"] == 32_000


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_replay_writes_the_trace(transcript_file: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"trace{suffix}"
    assert main(["replay", str(transcript_file), "--out", str(out)]) == 0
    frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert len(frame) == 8
    assert {"prompt_tokens", "prefix_tokens", "threshold_tokens"} <= set(frame.columns)
    assert not list(tmp_path.glob(".*.tmp"))
    # Every other frame of the run lands beside the trace, named <stem>.<frame><suffix>.
    names = ("compactions", "breaks", "probes", "compaction_diff", "compaction_items", "faithfulness")
    assert sorted(p.name for p in tmp_path.glob(f"trace.*{suffix}")) == sorted(f"trace.{n}{suffix}" for n in names)
    read = pd.read_csv if suffix == ".csv" else pd.read_parquet
    probes = read(tmp_path / f"trace.probes{suffix}")
    assert set(probes["request"]) == set(range(8)) and (probes["engine"] == "passthrough").all()


def test_replay_out_is_byte_identical_without_timing(transcript_file: Path, tmp_path: Path) -> None:
    args = ["replay", str(transcript_file), "--engine", "compressor", "--context-length", "3000", "--no-timing"]
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        assert main([*args, "--out", str(tmp_path / run / "t.parquet")]) == 0
    first = sorted((tmp_path / "a").iterdir())
    assert len(first) == 7
    for path in first:
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name


def test_replay_without_probes_writes_the_same_host_columns_and_no_measurement_frames(
    transcript_file: Path, tmp_path: Path
) -> None:
    args = ["replay", str(transcript_file), "--engine", "compressor", "--context-length", "3000", "--no-timing"]
    for run, extra in (("probed", []), ("plain", ["--no-probes"])):
        (tmp_path / run).mkdir()
        assert main([*args, *extra, "--out", str(tmp_path / run / "t.csv")]) == 0
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == ["t.compactions.csv", "t.csv"]
    plain, probed = pd.read_csv(tmp_path / "plain" / "t.csv"), pd.read_csv(tmp_path / "probed" / "t.csv")
    assert "identifier_retention" in probed.columns and "identifier_retention" not in plain.columns
    pd.testing.assert_frame_equal(plain, probed[list(plain.columns)])
    compactions = "t.compactions.csv"
    assert (tmp_path / "plain" / compactions).read_bytes() == (tmp_path / "probed" / compactions).read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "missing.json"], "missing.json: file not found"),
        (["replay", "{t}", "--engine", "passthruogh"], "did you mean 'passthrough'"),
        (["replay", "{t}", "--out", "trace.txt"], "use a .csv or .parquet"),
        (["replay", "{t}", "--out", "no/such/dir/t.csv"], "does not exist"),
        (["replay", "{t}", "--context-length", "-5"], "expected a positive integer"),
        (["replay", "{t}", "--threshold-percent", "abc"], "expected a number"),
        (["replay", "{t}", "--param", "novalue"], "expected KEY=VALUE"),
        (["replay", "{t}", "--tool-results", "raw"], "invalid choice: 'raw'"),
        (["replay", "{t}", "--param", "bogus=1"], "bad parameters"),
        (["replay", "{t}", "--cache", "anthropic:claude-sonnet-4-5"], "no price for this model"),
        (["replay", "{t}", "--cache", "nosuchprovider"], "unknown cache provider"),
        (["bench", "{t}", "--cache", "anthropic:claude-sonnet-4-5"], "no price for this model"),
        (["replay", "{t}", "--no-probes", "--facts", "facts.jsonl"], "drop --no-probes"),
        (["nonsense"], "unknown command 'nonsense'"),
    ],
)
def test_user_mistakes_print_one_line_and_exit_2(
    transcript_file: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    argv = [a.replace("{t}", str(transcript_file)) for a in args]
    proc = subprocess.run([sys.executable, "-m", "contextlab.cli", *argv], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and not line.startswith("usage:") and not line.startswith("  ")
    ]
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": "hi"},\n')
    proc = subprocess.run([sys.executable, "-m", "contextlab.cli", "replay", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"contextlab: error: {bad}:line 2: invalid JSON: Expecting value (column 1)"


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("hermes_rules=0.18", "hermes_rules must be one of ['0.19.0', 'newest'], got 0.18"),
        ("micro_compact=maybe", "micro_compact must be true or false, got 'maybe'"),
        ("abort_on_summary_failure=1", "abort_on_summary_failure must be true or false, got 1"),
    ],
)
def test_a_bad_compressor_parameter_is_one_line_and_exit_2(
    transcript_file: Path, capsys: pytest.CaptureFixture[str], param: str, message: str
) -> None:
    code = main(
        ["replay", str(transcript_file), "--engine", "compressor", "--context-length", "16000", "--param", param]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("contextlab: error: engine 'compressor' failed to start") and message in err


def test_report_reads_every_frame_replay_out_wrote(tmp_path: Path) -> None:
    source = tmp_path / "long.jsonl"
    save_transcript(tool_conversation(8, 1_800, seed=0), source)
    trace = tmp_path / "run.parquet"
    args = ["replay", str(source), "--engine", "compressor", "--context-length", "4000", "--out", str(trace)]
    assert main(args) == 0
    assert len(pd.read_parquet(tmp_path / "run.compaction_diff.parquet")) > 0
    page = tmp_path / "report.html"
    assert main(["report", str(trace), "--out", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    # The compaction diffs and faithfulness checks come from the sibling files, not from the trace.
    assert "What each compaction dropped" in text and "Summary faithfulness" in text
    for name in ("probes", "compaction_diff", "compaction_items", "faithfulness"):
        (tmp_path / f"run.{name}.parquet").unlink()
    assert main(["report", str(trace), "--out", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "What each compaction dropped" not in text and "Prefix breaks by cause" in text


def test_report_names_a_broken_sibling_frame_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "long.jsonl"
    save_transcript(tool_conversation(8, 1_800, seed=0), source)
    trace = tmp_path / "run.parquet"
    assert main(["replay", str(source), "--engine", "compressor", "--context-length", "4000", "--out", str(trace)]) == 0
    capsys.readouterr()
    (tmp_path / "run.faithfulness.parquet").write_text("not parquet")
    page = tmp_path / "report.html"
    assert main(["report", str(trace), "--out", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run.faithfulness.parquet: cannot read as parquet" in err
    assert not page.exists() and not list(tmp_path.glob(".*.tmp"))
