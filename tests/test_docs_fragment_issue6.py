"""Every command in docs-fragments/issue-6.md runs, and its dataset table matches the datasets."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from contextlab.cli import main
from contextlab.datasets import describe, load_dataset

FRAGMENT = Path(__file__).resolve().parent.parent / "docs-fragments" / "issue-6.md"


def _commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", FRAGMENT.read_text(), re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith("contextlab ")]


def test_fragment_commands_run(
    repo: Path, shared_transcripts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    commands = _commands()
    assert len(commands) == 4
    for command in commands:
        command = command.replace(
            "~/.claude/projects/my-project/SESSION.jsonl",
            str(shared_transcripts / "claude-code" / "short.jsonl"),
        )
        command = command.replace("session.jsonl.gz", str(tmp_path / "session.jsonl.gz"))
        assert main(shlex.split(command)[1:]) == 0, command


def test_fragment_dataset_table_is_current() -> None:
    rows = re.findall(
        r"^\| `([a-z-]+)` \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|$", FRAGMENT.read_text(), re.MULTILINE
    )
    assert len(rows) == 3
    for name, requests, tokens, facts in rows:
        figures = describe(load_dataset(name))
        assert (figures["requests"], figures["tokens"], figures["facts"]) == (
            int(requests.replace(",", "")),
            int(tokens.replace(",", "")),
            int(facts.replace(",", "")),
        ), name
