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


def cli_blocks() -> list[list[str]]:
    """The ``contextlab ...`` lines of each ``console`` block (a block's commands run in order)."""
    found = []
    for body in blocks("console"):
        joined = body.replace("\\\n", " ")
        commands = [line.strip().removeprefix("$ ").strip() for line in joined.splitlines()]
        commands = [c for c in commands if c.startswith("contextlab ")]
        if commands:
            found.append(commands)
    return found


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    """A scratch checkout that sees the repo's data folders (and ``../shared`` beside it, as the
    README's paths assume), so outputs never land in the repo."""
    work = tmp_path / "contextlab"
    work.mkdir()
    for name in ("datasets", "plugins", "notebooks", "docs"):
        if (REPO / name).exists():
            (work / name).symlink_to(REPO / name)
    shared = Path(os.environ.get("CONTEXTLAB_TRANSCRIPTS", REPO.parent / "shared" / "transcripts")).parent
    if shared.is_dir():
        (tmp_path / "shared").symlink_to(shared)
    return work


def test_readme_has_the_two_quickstart_commands() -> None:
    assert "<!-- main-command -->" in README and "<!-- test-command -->" in README
    assert cli_blocks(), "the README shows no contextlab command"


@pytest.mark.parametrize("commands", cli_blocks(), ids=lambda c: c[0][:60])
def test_readme_cli_commands_run(commands: list[str], workdir: Path) -> None:
    if any("../shared/" in c for c in commands) and not (workdir.parent / "shared").is_dir():
        pytest.skip("the real transcripts in ../shared are not here")
    env = {**os.environ, "TQDM_DISABLE": "1"}
    for command in commands:
        args = shlex.split(command)
        proc = subprocess.run(
            [sys.executable, "-m", "contextlab.cli", *args[1:]],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"


@pytest.mark.parametrize("snippet", blocks("python"), ids=lambda s: s.splitlines()[0][:50])
def test_readme_python_snippet_runs(snippet: str, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    exec(compile(snippet, "README.md", "exec"), {"__name__": "__readme__"})


def test_readme_keeps_every_section_and_names_only_existing_benchmarks() -> None:
    # A splice of measured tables once cut the README off after the Performance section (the later
    # benchmarks and all of Development were gone); this notices such a loss.
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == [
        "Quickstart",
        "Replaying a transcript",
        "Transcripts: bring your own logs",
        "Measurements: what an engine forgot, what it costs, and why",
        "Engines",
        "Prompt-cache simulation, pricing and calibration",
        "Sweeps, reports, notebooks and the dashboard",
        "How the replay works",
        "The trace",
        "Performance",
        "Development",
    ]
    assert "`.ci/run`" in README.split("## Development", 1)[1]
    named = set(re.findall(r"benchmarks/(\w+\.py)", README))
    assert named and all((REPO / "benchmarks" / name).is_file() for name in named)
    assert {"scale.py", "probe_overhead.py", "engines_replay.py", "startup.py"} <= named
