"""The benchmark scripts run end to end (smoke tests: their timings are reported, never asserted)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("script", "args", "expect"),
    [
        (
            "replay_speed.py",
            ["datasets/coding-agent-short.jsonl.gz", "--repeat", "1", "--no-sessions"],
            ("tokenize-once s",),
        ),
        (
            "scale.py",
            [
                *("--path", "datasets/coding-agent-short.jsonl.gz", "--sizes", "1,2", "--engines", "passthrough"),
                *("--cache", "", "--repeat", "2", "--memory-check", "30"),
            ],
            ("suffix/req", "largest growth of the floor ratio", "(2, ", "% apart)"),
        ),
        (
            "scale.py",
            [
                *("--path", "datasets/coding-agent-short.jsonl.gz", "--sizes", "1,2", "--engines", "retrieval"),
                *("--cache", "", "--repeat", "1", "--context-length", "8000", "--param", "min_group_fraction=0.25"),
            ],
            ("engine parameters: min_group_fraction=0.25", "retrieval       no        2x", "1 child"),
        ),
        (
            "probe_overhead.py",
            ["--repeat", "1", "--times", "1", "--engines", "passthrough"],
            ("stored", "coding-agent-x1"),
        ),
        (
            "probe_overhead_cli.py",
            ["--repeat", "1", "--times", "1", "--engines", "passthrough"],
            ("first sight", "coding-agent-x1      passthrough           605"),
        ),
        (
            "redaction.py",
            ["datasets/coding-agent-short.jsonl.gz", "--repeat", "1"],
            ("distinct texts", "from 1 transcript files", "contextlab ", "host "),
        ),
    ],
)
def test_benchmark_script_runs(script: str, args: list[str], expect: tuple[str, ...]) -> None:
    output = _run(script, args)
    assert all(text in output for text in expect), output


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (.ci/run installs it)")
def test_instruction_counts_grow_with_the_session() -> None:
    args = ["--path", "datasets/coding-agent-short.jsonl.gz", "--sizes", "1,2", "--engines", "passthrough"]
    output = _run("scale_instructions.py", [*args, "--cache", "", "--jobs", "2"])
    assert "largest growth of the instruction ratio" in output, output
    rows = {line.split()[2]: float(line.split()[3]) for line in output.splitlines() if line.startswith("passthrough")}
    assert set(rows) == {"1x", "2x"} and 0 < rows["1x"] < rows["2x"], output  # two copies replay more than one


def test_instruction_counts_without_valgrind_say_what_is_missing() -> None:
    done = _without_valgrind("scale_instructions.py", [])
    assert done.returncode != 0
    assert done.stderr.strip() == "valgrind not found: install it (Debian and Ubuntu: apt-get install valgrind)"


@pytest.mark.parametrize(
    ("sizes", "error"),
    [("1,x", "expected comma-separated whole numbers"), ("0,1", "each size must be at least 1")],
)
def test_instruction_counts_reject_bad_sizes_in_one_line(sizes: str, error: str) -> None:
    done = _without_valgrind("scale_instructions.py", ["--sizes", sizes])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == f"scale_instructions.py: error: --sizes: {error}, got {sizes!r}"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (.ci/run installs it)")
@pytest.mark.parametrize(
    ("mode", "state"),
    [("--cache-sim", "targets extracted and stored"), ("--stored", "targets read from the store")],
)
def test_probe_instruction_counts_give_the_cold_ratio(mode: str, state: str) -> None:
    args = ["--dataset", "coding-agent-short", "--engines", "passthrough", "--jobs", "2", mode]
    output = _run("probe_instructions.py", args)
    assert "largest cold ratio" in output and state in output, output
    row = next(line.split() for line in output.splitlines() if line.startswith("passthrough"))
    plain, probed, ratio = (float(x) for x in row[2:5])
    assert 0 < plain < probed and ratio > 1, output  # the probe's work is counted on top of the replay's
    if mode == "--cache-sim":
        plain_misses, probed_misses = (float(x) for x in row[5:7])
        assert plain_misses > 0 and probed_misses > 0, output


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--times", "1,x"], "--times: expected comma-separated whole numbers, got '1,x'"),
        (["--times", "0"], "--times: each must be at least 1, got '0'"),
        (["--dataset", "nope"], "--dataset: unknown dataset 'nope' (available: "),
    ],
)
def test_probe_instruction_counts_reject_bad_arguments_in_one_line(args: list[str], error: str) -> None:
    done = _without_valgrind("probe_instructions.py", args)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"probe_instructions.py: error: {error}")


def _script(
    script: str, args: list[str], timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``benchmarks/<script> args`` run from the repository, its output captured (whatever its exit)."""
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def _without_valgrind(script: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The script run with an empty ``PATH`` (no valgrind), so a usage error shows whatever the machine has."""
    return _script(script, args, timeout=60, env={**os.environ, "PATH": "/nonexistent"})


def _run(script: str, args: list[str]) -> str:
    """The script's standard output, once it has exited 0."""
    done = _script(script, args, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_replay_speed_reports_each_session_its_repetition_and_its_sidechains(
    shared_transcripts: Path, tmp_path: Path
) -> None:
    """One real session (copied to a scratch folder with its subagent sidechains) gets a row, the
    repetition of the worst one a row, and each sidechain of two or more requests a row."""

    session = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"
    source = shared_transcripts / "claude-code"
    shutil.copy(source / f"{session}.jsonl", tmp_path)
    shutil.copytree(source / session, tmp_path / session)
    args = ["datasets/coding-agent-short.jsonl.gz", "--repeat", "1", "--sessions", str(tmp_path), "--long", "400"]
    output = _run("replay_speed.py", args)
    lines = output.splitlines()
    assert any(line.startswith("fa812bfe ") for line in lines)
    assert any(line.startswith("fa81x3 ") for line in lines)  # 157 requests, repeated to about 400
    assert "subagent sidechains" in output
    assert sum(line.startswith("fa81/") for line in lines) == 2  # the two sidechains of 9 and 11 requests


@pytest.mark.parametrize("pair", ["min_group_fraction", "=1", " =0.5"])
def test_scale_rejects_a_bad_engine_parameter_in_one_line(pair: str) -> None:
    done = _script("scale.py", ["--param", pair])
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.splitlines()[-1].startswith("scale.py: error: argument --param: "), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("script", "args", "error"),
    [
        ("probe_overhead_cli.py", ["--engines", "passthrough,nope"], "--engines: unknown nope (shipped: "),
        ("probe_overhead_cli.py", ["--times", "2,x"], "--times: expected comma-separated whole numbers, got '2,x'"),
        ("probe_overhead_cli.py", ["--times", "0"], "--times: each must be at least 1, got '0'"),
        ("probe_overhead_cli.py", ["--repeat", "0"], "argument --repeat: must be at least 1, got '0'"),
        ("probe_overhead_cli.py", ["--transcript", "no/such.jsonl"], "--transcript: no/such.jsonl: file not found"),
        ("probe_overhead.py", ["--transcript", "no/such.jsonl"], "--transcript: no/such.jsonl: file not found"),
        ("probe_overhead.py", ["--transcript", "README.md"], "--transcript: README.md: not a format contextlab reads"),
        ("probe_overhead.py", ["--engines", "nope"], "--engines: unknown nope (shipped: "),
        ("probe_overhead.py", ["--context-length", "0"], "argument --context-length: must be at least 1, got '0'"),
        ("redaction.py", ["no/such.jsonl"], "no such file or directory: no/such.jsonl"),
        ("redaction.py", ["--repeat", "0"], "argument --repeat: must be at least 1, got '0'"),
        ("redaction.py", ["README.md"], "no transcript text found in README.md"),
    ],
)
def test_probe_overhead_scripts_reject_bad_arguments_in_one_line(script: str, args: list[str], error: str) -> None:
    done = _script(script, args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"{script}: error: {error}"), done.stderr


@pytest.mark.parametrize("script", ["probe_overhead.py", "probe_overhead_cli.py"])
def test_probe_overhead_measures_a_recorded_session(script: str, shared_transcripts: Path) -> None:
    """``--transcript`` replays that file (at ``--context-length``) instead of the bundled session."""
    path = shared_transcripts / "claude-code" / "short.jsonl"
    output = _run(script, ["--repeat", "1", "--engines", "lcm", "--transcript", str(path), "--context-length", "8000"])
    rows = [line.split() for line in output.splitlines() if " lcm " in f" {line} "]
    assert len(rows) == 1 and rows[0][0].startswith("short") and int(rows[0][2]) > 0, output  # that file, its requests
    assert "coding-agent" not in output, output
