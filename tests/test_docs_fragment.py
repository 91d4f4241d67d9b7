"""The commands in ``docs-fragments/notebooks.md`` run as written (paths swapped for test files)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from contextlab.cli import main
from contextlab.transcripts import save_transcript
from tests.synthetic import make_transcript

FRAGMENT = Path(__file__).resolve().parent.parent / "docs-fragments" / "notebooks.md"


def _commands(prefix: str) -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", FRAGMENT.read_text(), flags=re.S)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.startswith(prefix)]


def test_contextlab_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    save_transcript(make_transcript(), tmp_path / "transcripts.json")
    commands = _commands("contextlab ")
    assert [c[1] for c in commands] == ["bench", "report"]
    for argv in commands:
        assert main(argv[1:]) == 0, capsys.readouterr()
    assert (tmp_path / "results" / "summary.csv").is_file()
    assert (tmp_path / "results" / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_jupytext_command(tmp_path: Path) -> None:
    jupytext = pytest.importorskip("jupytext")
    (argv,) = _commands("jupytext ")
    assert argv[1:3] == ["--to", "ipynb"]
    source = FRAGMENT.parent.parent / argv[3]
    notebook = jupytext.read(source)
    assert notebook.cells and notebook.metadata["kernelspec"]["name"] == "python3"


def test_ui_commands_name_the_real_test() -> None:
    (pytest_line,) = _commands("pytest ")
    assert pytest_line[1:3] == ["-m", "ui"]
    assert (FRAGMENT.parent.parent / pytest_line[3]).is_file()
