"""``contextlab bench`` and ``contextlab report`` end to end (in-process through ``main``)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import yaml

from contextlab.cli import main
from contextlab.cli.bench import parse_grid
from contextlab.examples import tool_conversation
from contextlab.transcripts import save_transcript


@pytest.fixture()
def transcript_file(tmp_path):
    path = tmp_path / "conv.jsonl"
    save_transcript(tool_conversation(8, 1_800, seed=0), path)
    return path


def test_bench_then_report(transcript_file, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "run"
    argv = ["bench", str(transcript_file), "--engine", "passthrough", "--grid", "threshold_percent=0.5,0.75"]
    argv += ["--context-length", "4000", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0].split()[:3] == ["engine", "params", "runs"]
    assert [line.split()[:2] for line in lines[1:3]] == [["passthrough", "pct=0.5"], ["passthrough", "pct=0.75"]]
    assert max(len(line) for line in lines[:3]) <= 100
    summary = pd.read_csv(out / "summary.csv")
    assert summary["status"].tolist() == ["ok", "ok"]
    assert summary["threshold_percent"].tolist() == [0.5, 0.75]
    assert len(pd.read_csv(out / "trace.csv")) == 2 * 16
    assert (out / "config.yaml").is_file() and (out / "report.html").is_file()
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["engines_prompt_tokens_total.png", "transcript_00.png"]
    # the same command again reuses every finished run and says so
    assert main(argv) == 0
    assert "resumed: 2 of 2 runs were already finished" in capsys.readouterr().out

    assert main(["report", str(out / "trace.csv"), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "Leaderboard" in html and "passthrough" in html  # the summary file was found beside the trace


def test_bench_report_shows_what_each_compaction_dropped(transcript_file, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    argv = ["bench", str(transcript_file), "--engine", "compressor", "--context-length", "4000"]
    assert main([*argv, "--no-progress", "--out", str(out)]) == 0
    assert len(pd.read_csv(out / "compaction_diff.csv")) > 0
    for page in (out / "report.html", tmp_path / "again.html"):
        if page.name == "again.html":  # contextlab report finds the measurement frames beside the trace
            assert main(["report", str(out / "trace.csv"), "--out", str(page)]) == 0
        text = page.read_text(encoding="utf-8")
        assert "What each compaction dropped" in text and "Summary faithfulness" in text


def test_bench_prints_percent_and_dollars_per_engine_or_transcript(tmp_path, capsys) -> None:
    for seed in (1, 2):
        save_transcript(tool_conversation(8, 1_800, seed=seed, name=f"conv{seed}"), tmp_path / f"c{seed}.jsonl")
    base = [
        "bench",
        str(tmp_path),
        "--engine",
        "passthrough",
        "--cache",
        "anthropic:claude-sonnet-5-5",
        "--no-progress",
    ]
    assert main(base) == 0  # a folder is accepted wherever files are
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].split()[:3] == ["passthrough", "ctx=200000", "2"]  # one row per engine
    assert re.search(r"\d+\.\d%", lines[1]) and re.search(r"\$\d+\.\d{4}", lines[1])
    assert main([*base, "--by", "transcript"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split()[0] for r in rows] == ["conv1", "conv2"]


def test_a_config_file_runs_and_is_saved(tmp_path, capsys, transcript_file) -> None:
    config = tmp_path / "sweep.yaml"
    out = tmp_path / "out"
    config.write_text(
        f"""
transcripts: [{transcript_file}]
engines:
  - passthrough
  - name: compressor
    grid: {{threshold_percent: [0.5, 0.75]}}
settings: {{context_length: 8000}}
out: {out}
format: parquet
"""
    )
    assert main(["bench", str(config), "--no-progress"]) == 0
    summary = pd.read_parquet(out / "summary.parquet")
    assert summary["engine"].tolist() == ["passthrough", "compressor", "compressor"]
    assert summary["context_length"].tolist() == [8000] * 3
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["grid"] == {"compressor.threshold_percent": [0.5, 0.75]} and saved["format"] == "parquet"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("engins: [passthrough]", "unknown key 'engins'; did you mean 'engines'?"),
        ("settings: {context_lenght: 4}", "unknown host setting 'context_lenght'; did you mean 'context_length'?"),
        ("engines: [{name: compressor, gird: {}}]", "engines[0]: unknown key 'gird'; did you mean 'grid'?"),
        ("workers: zero", "workers: expected an integer >= 1"),
        ("transcripts: [a\n  b: [", ":2: invalid YAML"),  # the one YAML error line (contextlab/yaml_file.py)
    ],
)
def test_config_mistakes_are_one_line(tmp_path, capsys, text, message) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    assert main(["bench", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"contextlab: error: {config}") and message in err and len(err.strip().splitlines()) == 1


def test_bench_all_ok_parquet_two_workers(transcript_file, tmp_path, capsys) -> None:
    code = main(
        [
            "bench",
            str(transcript_file),
            "--grid",
            "context_length=4000,8000",
            "--workers",
            "2",
            "--format",
            "parquet",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    assert pd.read_parquet(tmp_path / "summary.parquet")["context_length"].tolist() == [4000, 8000]
    assert "ctx=8000" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "{path}", "--grid", "threshold_percent"], "expected KEY=V1,V2"),
        (["bench", "{path}", "--grid", "threshold_percent=2.5"], "grid threshold_percent=2.5"),
        (["bench", "{path}", "--workers", "0"], "--workers must be >= 1"),
        (["bench", "{missing}"], "missing.jsonl"),
        (["bench", "{path}", "--engine", "compresor"], "unknown engine 'compresor'; did you mean 'compressor'?"),
        (
            ["bench", "{path}", "--grid", "keep_turns=1,2"],
            "--grid keep_turns: engine 'passthrough' takes no parameter 'keep_turns'",
        ),
        (["bench", "{path}", "--grid", "threshold_percen=0.5"], "did you mean 'threshold_percent'?"),
        (["bench", "{path}", "--engine", "compressor", "--grid", "compresor.threshold_percent=0.5"], "did you mean"),
        (["report", "{missing}"], "no such file"),
    ],
)
def test_errors_are_one_line(transcript_file, tmp_path, capsys, argv, message) -> None:
    argv = [a.format(path=transcript_file, missing=tmp_path / "missing.jsonl") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("contextlab: error:") and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_parse_grid_values() -> None:
    assert parse_grid(["threshold-percent=0.5,0.75", "keep_turns=4,8", "mode=a,b", "compressor.tail-mode=lean"]) == {
        "threshold_percent": [0.5, 0.75],
        "compressor.tail_mode": ["lean"],
        "keep_turns": [4, 8],
        "mode": ["a", "b"],
    }
