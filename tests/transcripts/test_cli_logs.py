"""Issue 11 on the command line: every bad input is one line and exit 2, warnings are one-line
messages, inspect / --facts / --no-timing / calibrate --index, and byte-identical replays."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextlab.cli import main
from contextlab.examples import tool_conversation
from contextlab.transcripts import load_transcript, load_transcripts, save_transcript
from tests.transcripts.transcript_samples import SAMPLES, render


@pytest.fixture()
def transcript_file(tmp_path: Path) -> Path:
    path = tmp_path / "synthetic.jsonl"
    save_transcript(tool_conversation(4), path)
    return path


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("contextlab: error: "), err
    return lines[0]


def _sample(tmp_path: Path, name: str) -> Path:
    kind, value = SAMPLES[name]
    path = tmp_path / f"{name}.{kind}"
    path.write_text(render(kind, value))
    return path


def test_fifo_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # no writer: opening it would block forever
    assert main(["replay", str(fifo)]) == 2
    assert "is a FIFO (named pipe)" in _one_error_line(capsys)
    assert main(["inspect", str(fifo)]) == 2
    assert "FIFO" in _one_error_line(capsys)


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"role": "user", "content": "hi"}]).encode())
    assert load_transcript(path).messages == [{"role": "user", "content": "hi"}]
    lines = tmp_path / "bom.jsonl"
    lines.write_bytes(b"\xef\xbb\xbf" + render("jsonl", SAMPLES["codex"][1]).encode())
    assert load_transcript(lines).source_format == "codex"


@pytest.mark.parametrize("as_lines", [False, True])
def test_json_nested_100000_levels_is_one_line(
    tmp_path: Path, as_lines: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.json"
    path.write_text(f'{{"role": "user", "content": "x"}}\n{deep}\n' if as_lines else deep)
    assert main(["convert", str(path), str(tmp_path / "out.jsonl")]) == 2
    assert "nested too deeply" in _one_error_line(capsys)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_usage_is_one_line(tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    openai = tmp_path / "chat.json"
    openai.write_text(
        '[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "usage": {"prompt_tokens": '
        + value
        + "}}]"
    )
    assert main(["replay", str(openai)]) == 2
    line = _one_error_line(capsys)
    assert "usage.prompt_tokens" in line and "NaN/Infinity" in line
    pair = dict(SAMPLES["anthropic-pairs"][1][1])
    text = json.dumps(pair).replace('"output_tokens": 8', f'"output_tokens": {value}')
    anthropic = tmp_path / "pair.json"
    anthropic.write_text(text)
    assert main(["inspect", str(anthropic)]) == 2
    assert "usage.output_tokens" in _one_error_line(capsys)


def test_lone_surrogates_are_written_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "odd.json"
    source.write_text('[{"role": "user", "content": "bad \\ud800 half"}, {"role": "assistant", "content": "ok"}]')
    out = tmp_path / "odd.jsonl"
    assert main(["convert", str(source), str(out)]) == 0
    raw = out.read_bytes()
    raw.decode("utf-8")  # valid UTF-8 on disk
    assert b"\\ud800" in raw
    assert load_transcripts(out)[0].messages[0]["content"] == "bad \ud800 half"  # nothing lost


def test_output_path_is_checked_before_the_replay(
    transcript_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import contextlab.cli.replay as replay_cli

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the replay ran before --out was checked")

    monkeypatch.setattr(replay_cli, "replay", never)
    assert main(["replay", str(transcript_file), "--out", str(tmp_path / "trace.txt")]) == 2
    assert "use a .csv or .parquet" in _one_error_line(capsys)
    (tmp_path / "dir.csv").mkdir()
    assert main(["replay", str(transcript_file), "--out", str(tmp_path / "dir.csv")]) == 2
    assert "is a folder" in _one_error_line(capsys)
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # an unwritable folder (tests may run as root)
    assert main(["replay", str(transcript_file), "--out", str(tmp_path / "t.csv")]) == 2
    assert "not writable" in _one_error_line(capsys)
    assert main(["convert", str(transcript_file), str(tmp_path / "c.jsonl")]) == 2
    assert "not writable" in _one_error_line(capsys)


@pytest.mark.parametrize("value", ["0", "-0.2", "1.5", "50", "nan"])
def test_threshold_percent_is_a_fraction(transcript_file: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["replay", str(transcript_file), "--threshold-percent", value])
    assert info.value.code == 2
    assert "expected a fraction in (0, 1]" in capsys.readouterr().err
    assert main(["replay", str(transcript_file), "--threshold-percent", "1", "--json"]) == 0


def test_unknown_format_names_the_closest_and_lists_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"history": "not a list", "trajectory": 3, "info": {}}))
    assert main(["inspect", str(path)]) == 2
    line = _one_error_line(capsys)
    assert "not a format contextlab reads; closest: swe-agent;" in line and "codex" in line and "aider" in line
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    assert main(["replay", str(text)]) == 2
    assert "not a format contextlab reads" in _one_error_line(capsys)


def test_import_warnings_are_one_line_each_then_a_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = [{"from": "human", "value": "q"}]
    for k in range(8):
        turns += [{"from": "gpt", "value": f"<tool_call>not json {k}</tool_call>"}, {"from": "human", "value": f"u{k}"}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"conversations": turns}))
    assert main(["replay", str(path), "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("contextlab: warning: ") for line in err)
    assert len(err) == 6 and err[-1] == "contextlab: warning: ... and 3 more import warnings (not shown)"
    assert "tool_call 0: not valid JSON" in err[0]


def test_inspect_lists_conversations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _sample(tmp_path, "claude-trace")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 conversation(s), format claude-trace" in out and "2 requests with recorded usage" in out
    assert main(["inspect", str(_sample(tmp_path, "tau-bench")), "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["format"] == "tau-bench" and row["messages"] == 4 and row["requests"] == 2 and row["tokens"] > 0


def test_replay_with_a_facts_sidecar(transcript_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = load_transcript(transcript_file)
    needle = transcript.messages[0]["content"].split()[0]
    facts = tmp_path / "facts.jsonl"
    facts.write_text(f"# planted\n{json.dumps({'text': needle, 'category': 'decision', 'needed_later': True})}\n")
    assert main(["replay", str(transcript_file), "--facts", str(facts), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["fact_retention_final"] == 1.0
    facts.write_text('{"text": "never said anywhere"}\n')
    assert main(["replay", str(transcript_file), "--facts", str(facts)]) == 2
    assert "facts.jsonl:line 1: text 'never said anywhere' is not in any message" in _one_error_line(capsys)
    facts.write_text('{"text": "x", "category": "trivia"}\n')
    assert main(["replay", str(transcript_file), "--facts", str(facts)]) == 2
    assert "field 'category'" in _one_error_line(capsys)


def test_no_timing_replays_are_byte_identical(
    transcript_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for k in range(2):
        out = tmp_path / f"trace{k}.csv"
        args = ["replay", str(transcript_file), "--engine", "compressor", "--context-length", "4000"]
        assert main([*args, "--no-timing", "--json", "--out", str(out)]) == 0
        outputs.append((out.read_bytes(), capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    header = outputs[0][0].split(b"\n")[0].decode()
    assert "engine_ms" not in header and "prompt_tokens" in header
    assert "wall_s" not in json.loads(outputs[0][1])


def test_calibrate_index_picks_a_conversation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.jsonl"
    rows = SAMPLES["openai-request-log"][1]
    other = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "other"}, {"role": "assistant", "content": "x"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1},
    }
    path.write_text(render("jsonl", [*rows, other]))
    assert [t.n_requests for t in load_transcripts(path)] == [2, 1]
    assert main(["calibrate", str(path), "--index", "1", "--json", "--provider", "openai:gpt-4o"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first["requests"] == 1
    assert main(["calibrate", str(path), "--index", "5"]) == 2
    assert "conversation 5 requested, the file holds 2" in _one_error_line(capsys)
