"""The commands in ``docs-fragments/notebooks.md`` run as written (paths swapped for test files)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from contextlab.cli import main

REPO = Path(__file__).resolve().parent.parent
FRAGMENT = REPO / "docs-fragments" / "notebooks.md"


def _commands(prefix: str) -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", FRAGMENT.read_text(), flags=re.S)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.startswith(prefix)]


def _in_repo(argv: list[str]) -> list[str]:
    """Repo-relative ``datasets/...`` arguments as absolute paths (the test runs in a temp folder)."""
    return [str(REPO / a) if a.startswith("datasets/") else a for a in argv]


def test_contextlab_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    commands = _commands("contextlab ")
    assert [c[1] for c in commands] == ["bench", "report"]
    for argv in commands:
        assert main(_in_repo(argv)[1:]) == 0, capsys.readouterr()
    summary = pd.read_csv(tmp_path / "results" / "summary.csv")
    assert summary["cache_hit_rate"].between(0, 1).all() and (summary["cost_usd"] > 0).all()
    assert (tmp_path / "results" / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_python_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", FRAGMENT.read_text(), flags=re.S)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    namespace: dict[str, object] = {}
    exec(compile(_in_repo_text(block), str(FRAGMENT), "exec"), namespace)
    result = namespace["result"]
    assert len(result.summaries) == 4 and result.failed.empty  # type: ignore[attr-defined]
    assert (tmp_path / "report.html").is_file()


def _in_repo_text(code: str) -> str:
    return code.replace('"datasets/', f'"{REPO}/datasets/')


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
