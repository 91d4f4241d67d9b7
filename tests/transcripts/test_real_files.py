"""Every real transcript in ../shared/transcripts loads, converts losslessly and keeps its usage."""

from __future__ import annotations

import json
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


def test_real_sessions_as_claude_trace_rebuild_into_one_conversation(shared_transcripts: Path, tmp_path: Path) -> None:
    """Every request of a real Claude Code session logged as a claude-trace entry (full history, thinking
    in the response only) rebuilds the same conversation, with every request's usage kept."""
    from contextlab.transcripts.per_request import message_key
    from tests.transcripts.transcript_samples import as_claude_trace

    session = next((shared_transcripts / "claude-code").glob("ae4a77f8-*.jsonl"))
    (original,) = load_transcripts(session)
    path = tmp_path / "log-2026.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in as_claude_trace(original)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (rebuilt,) = load_transcripts(path)
    assert rebuilt.source_format == "claude-trace" and rebuilt.n_requests == original.n_requests == 217
    assert [message_key(m) for m in rebuilt.messages] == [message_key(m) for m in original.messages]
    assert sorted(rebuilt.usage) == sorted(original.usage)
    assert [u.prompt_tokens for _, u in sorted(rebuilt.usage.items())] == [
        u.prompt_tokens for _, u in sorted(original.usage.items())
    ]
    assert validate_messages(rebuilt.messages) == []


def test_real_conversations_as_hermes_trajectories_pair_with_zero_violations(
    shared_transcripts: Path, tmp_path: Path
) -> None:
    """tau-bench's 200 real conversations written the way Hermes saves trajectories (id-less calls, the
    same provider id in every response) load with 0 structural violations and the calls in order."""
    from tests.transcripts.transcript_samples import as_hermes_trajectory

    originals = load_transcripts(shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json")
    path = tmp_path / "trajectories.jsonl"
    path.write_text("".join(json.dumps(as_hermes_trajectory(t)) + "\n" for t in originals))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load_transcripts(path)
    assert len(loaded) == 200
    for original, trajectory in zip(originals, loaded, strict=True):
        assert validate_messages(trajectory.messages) == []
        assert [m["role"] for m in trajectory.messages] == [m["role"] for m in original.messages]
        names = [c["function"]["name"] for m in original.messages for c in m.get("tool_calls") or []]
        assert [c["function"]["name"] for m in trajectory.messages for c in m.get("tool_calls") or []] == names
