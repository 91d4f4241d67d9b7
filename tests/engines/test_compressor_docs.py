"""Every command of ``docs-fragments/issue-3.md``, run for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from llm_stub import StubServer

import contextlab
from contextlab.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_fragment_cli_replays(capsys: pytest.CaptureFixture[str]) -> None:
    data = str(REPO / "datasets" / "support-agent.jsonl.gz")
    assert main(["replay", data, "--engine", "compressor", "--context-length", "64000", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["engine"] == "compressor" and summary["compactions"] >= 3 and summary["violations"] == 0
    args = ["--param", "tail_mode=legacy", "--param", "threshold_tokens_cap=40000"]
    assert main(["replay", data, "--engine", "compressor", "--context-length", "64000", *args, "--json"]) == 0
    legacy = json.loads(capsys.readouterr().out)
    assert legacy["threshold_tokens"] == 40_000 and legacy["compactions"] > summary["compactions"]


def test_fragment_python_api() -> None:
    result = contextlab.replay(REPO / "datasets" / "support-agent.jsonl.gz", "compressor", context_length=64_000)
    frame = result.compactions[["request", "trigger", "tokens_before", "tokens_after"]]
    assert len(frame) >= 3


def test_fragment_llm_summarizer_cli(stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("openai")
    data = str(REPO / "datasets" / "support-agent.jsonl.gz")
    options = f'{{base_url: "{stub.base_url}", model: my-model, cache_dir: "{tmp_path / "cache"}"}}'
    argv = ["replay", data, "--engine", "compressor", "--context-length", "64000", "--json"]
    argv += ["--param", "summarizer=llm", "--param", f"summarizer_options={options}"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["compactions"] >= 1 and stub.requests
    calls = len(stub.requests)
    assert main([*argv[:-1], f"summarizer_options={options[:-1]}, mode: replay}}"]) == 0  # offline second replay
    second = json.loads(capsys.readouterr().out)
    assert len(stub.requests) == calls
    varying = {"wall_s", "engine_ms_total", "params"}  # wall time, and the mode now in the params label
    assert {k: v for k, v in second.items() if k not in varying} == {k: v for k, v in first.items() if k not in varying}


def test_fragment_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "compressor_speed.py"), "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "compressor compaction, extractive (cold)" in done.stdout, done.stderr
    assert "exact tokenize once (baseline)" in done.stdout


def test_golden_regeneration_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import golden_compressor

    monkeypatch.setattr(golden_compressor, "TESTDATA", tmp_path)
    assert golden_compressor.main() == 0
    for case in golden_compressor.CASES:
        committed = REPO / "tests" / "testdata" / case.trace_path.name
        assert (tmp_path / case.trace_path.name).read_text() == committed.read_text()
