"""Sweep sources: a folder or pattern skips files in no transcript format, and says so; nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextlab.bench.sources import load_source
from contextlab.cli import main
from contextlab.errors import ConfigError, TranscriptError, UnknownFormat
from contextlab.examples import tool_conversation
from contextlab.transcripts import TranscriptWarning, load_transcript, save_transcript


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    save_transcript(tool_conversation(3, 600, seed=1, name="one"), tmp_path / "one.jsonl")
    (tmp_path / "README.md").write_text("# Sessions\n\n- recorded on a laptop\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("true story\n", encoding="utf-8")
    (tmp_path / "meta.json").write_text('{"license": "MIT", "authors": ["a"]}', encoding="utf-8")
    return tmp_path


def test_a_folder_skips_files_in_no_format_and_names_each(folder: Path) -> None:
    with pytest.warns(TranscriptWarning) as caught:
        found = load_source(folder)
    assert [t.transcript_id for t in found] == ["one"]
    skipped = sorted(str(w.message).split(":")[0] for w in caught)
    assert skipped == sorted(str(folder / name) for name in ("README.md", "meta.json", "notes.txt"))
    assert all("skipped, not a format contextlab reads" in str(w.message) for w in caught)


def test_a_pattern_skips_them_too_and_a_named_file_is_still_an_error(folder: Path) -> None:
    with pytest.warns(TranscriptWarning):
        assert len(load_source(str(folder / "*"))) == 1
    with pytest.raises(UnknownFormat, match=r"README\.md: not a format contextlab reads"):
        load_source(folder / "README.md")
    with pytest.raises(UnknownFormat):
        load_transcript(folder / "notes.txt")


def test_a_broken_transcript_in_a_folder_stops_the_sweep(folder: Path) -> None:
    (folder / "two.jsonl").write_text('{"role": "user", "content": "hi"}\n{"role": \n', encoding="utf-8")
    with (
        pytest.warns(TranscriptWarning),
        pytest.raises(TranscriptError, match=r"two\.jsonl:line 2: invalid JSON") as raised,
    ):
        load_source(folder)
    assert not isinstance(raised.value, UnknownFormat)


def test_a_folder_of_no_transcripts_is_one_config_error(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("nothing here\n", encoding="utf-8")
    with pytest.warns(TranscriptWarning), pytest.raises(ConfigError, match="no transcripts among its 1 files"):
        load_source(tmp_path)


def test_the_cli_prints_one_warning_line_per_skipped_file(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(folder), "--engine", "passthrough", "--no-progress", "--no-probes"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sorted(err) == sorted(
        f"contextlab: warning: {folder / name}: skipped, not a format contextlab reads"
        for name in ("README.md", "meta.json", "notes.txt")
    )
