"""Every real transcript in ../shared/transcripts loads, converts losslessly and keeps its usage."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from contextlab.cli import main
from contextlab.messages import validate_messages
from contextlab.transcripts import convert_file, load_transcripts


def _real_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith((".json", ".jsonl", ".traj")))


def test_every_real_file_converts_losslessly(shared_transcripts: Path, tmp_path: Path) -> None:
    files = _real_files(shared_transcripts)
    assert len(files) == 18 + 59 + 1
    formats = set()
    for k, path in enumerate(files):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no real file needs a workaround
            original = load_transcripts(path)
        out = tmp_path / f"{k}.jsonl.gz"
        written = convert_file(path, out)
        assert written == original
        back = load_transcripts(out)
        assert back == original, path
        for before, after in zip(original, back, strict=True):
            formats.add(after.source_format)
            assert validate_messages(after.messages) == [], path
            assert after.usage.keys() == before.usage.keys()
            assert all(after.usage[i].raw == before.usage[i].raw for i in before.usage)
            assert sum(u.prompt_tokens for u in after.usage.values()) == sum(
                u.prompt_tokens for u in before.usage.values()
            )
            assert after.events == before.events and after.timestamps == before.timestamps
    assert formats == {"claude-code", "mini-swe-agent", "tau-bench"}


def test_cli_convert_round_trip(shared_transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = next((shared_transcripts / "claude-code").glob("ae4a77f8-*.jsonl"))
    out = tmp_path / "session.jsonl"
    assert main(["convert", str(session), str(out)]) == 0
    assert "1 transcript(s) (claude-code; 466 messages, 217 requests)" in capsys.readouterr().out
    (converted,) = load_transcripts(out)
    assert converted == load_transcripts(session)[0]
    assert [(e.trigger, e.pre_tokens) for e in converted.events] == [("manual", 142431)]
    tau = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    assert main(["convert", str(tau), str(tmp_path / "tau.jsonl.gz"), "--index", "3"]) == 0
    (one,) = load_transcripts(tmp_path / "tau.jsonl.gz")
    assert one == load_transcripts(tau)[3]
