"""Every file or folder a README command writes (``--out``, ``--plot``, ``convert``'s output, the
Python snippets' report) is git-ignored, so following the README leaves a clean checkout."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_readme import README, cli_blocks

REPO = Path(__file__).resolve().parent.parent


def written_paths() -> list[str]:
    paths: list[str] = []
    for block in cli_blocks():
        for command in block:
            args = shlex.split(command)
            for flag in ("--out", "--plot"):
                if flag in args:
                    paths.append(args[args.index(flag) + 1])
            if args[1] == "convert":
                paths.append(args[3])
    paths += re.findall(r'write_report\("([^"]+)"', README)
    return paths


def test_the_readme_writes_something() -> None:
    assert {"results", "trace.parquet", "report.html"} <= set(written_paths())


@pytest.mark.parametrize("path", written_paths())
def test_readme_output_is_git_ignored(path: str) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    target = path.rstrip("/") + ("/x" if "." not in Path(path).name else "")
    ignored = subprocess.run(["git", "check-ignore", "-q", target], cwd=REPO)
    assert ignored.returncode == 0, f"README writes {path}, which .gitignore does not cover"
