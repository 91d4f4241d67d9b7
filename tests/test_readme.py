"""Every command and Python snippet in the README runs as written (the quickstart pair runs in .ci/run)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README) if lang == language]


def cli_commands() -> list[str]:
    """``contextlab ...`` lines of ``console`` blocks (a trailing backslash continues a line)."""
    commands = []
    for body in blocks("console"):
        joined = body.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ").strip()
            if line.startswith("contextlab "):
                commands.append(line)
    return commands


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    """A scratch folder that sees the repo's data folders, so outputs never land in the repo."""
    for name in ("datasets", "plugins", "notebooks"):
        if (REPO / name).exists():
            (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def test_readme_has_the_two_quickstart_commands() -> None:
    assert "<!-- main-command -->" in README and "<!-- test-command -->" in README
    assert cli_commands(), "the README shows no contextlab command"


@pytest.mark.parametrize("command", cli_commands())
def test_readme_cli_command_runs(command: str, workdir: Path) -> None:
    env = {**os.environ, "CONTEXTLAB_TRANSCRIPTS": str(REPO.parent / "shared" / "transcripts")}
    args = shlex.split(os.path.expandvars(command.replace("$CONTEXTLAB_TRANSCRIPTS", env["CONTEXTLAB_TRANSCRIPTS"])))
    proc = subprocess.run(
        [sys.executable, "-m", "contextlab.cli", *args[1:]],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("snippet", blocks("python"), ids=lambda s: s.splitlines()[0][:50])
def test_readme_python_snippet_runs(snippet: str, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    exec(compile(snippet, "README.md", "exec"), {"__name__": "__readme__"})
