"""``contextlab bench`` and ``contextlab report`` end to end (in-process through ``main``)."""

from __future__ import annotations

import pandas as pd
import pytest

from contextlab.cli import main
from contextlab.cli.bench import parse_grid
from contextlab.transcripts import save_transcript
from tests.synthetic import make_transcript


@pytest.fixture()
def transcript_file(tmp_path):
    path = tmp_path / "conv.jsonl"
    save_transcript(make_transcript(), path)
    return path


def test_bench_then_report(transcript_file, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "run"
    code = main(
        [
            "bench",
            str(transcript_file),
            "--engine",
            "passthrough",
            "--engine",
            "nope",
            "--grid",
            "threshold_percent=0.5,0.75",
            "--context-length",
            "4000",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 1  # one engine failed; the others completed
    assert "FAILED synthetic x nope (ctx=4000,pct=0.5): EngineError: unknown engine 'nope'" in printed
    summary = pd.read_csv(out / "summary.csv")
    assert summary["status"].tolist() == ["ok", "ok", "failed", "failed"]
    assert summary["threshold_percent"].tolist() == [0.5, 0.75, 0.5, 0.75]
    assert len(pd.read_csv(out / "trace.csv")) == 2 * 16

    assert main(["report", str(out / "trace.csv"), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "Failed runs" in html and "unknown engine" in html  # the summary file was found beside the trace


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
    assert parse_grid(["threshold-percent=0.5,0.75", "keep=4,8", "mode=a,b"]) == {
        "threshold_percent": [0.5, 0.75],
        "keep": [4, 8],
        "mode": ["a", "b"],
    }
