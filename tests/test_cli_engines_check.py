"""``contextlab engines`` and ``contextlab check``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlab import plugins
from contextlab.cli import main
from tests.plugin_helpers import HOST_GUIDE_PLUGIN, write_plugin

BUNDLED = ["clear_tool_uses", "hybrid", "lcm", "mask_window", "retrieval", "summary"]


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "_default", plugins.Registry())
    monkeypatch.delenv(plugins.LOAD_PLUGINS_ENV, raising=False)
    monkeypatch.delenv(plugins.PLUGIN_PATH_ENV, raising=False)


def test_engines_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write_plugin(tmp_path, "guide_lcm", HOST_GUIDE_PLUGIN)
    write_plugin(tmp_path, "broken", "import contextlab_nope\nfrom agent.context_engine import ContextEngine\n")
    assert main(["engines", "--json", "--plugin-path", str(tmp_path)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name in BUNDLED:
        assert rows[name]["source"] == "bundled" and rows[name]["available"] is True
        assert rows[name]["version"] == "0.1.0" and rows[name]["description"]
    assert rows["passthrough"]["source"] == "builtin"
    assert rows["guide_lcm"]["source"] == "folder" and rows["guide_lcm"]["available"] is True
    assert rows["broken"]["available"] is False and "contextlab_nope" in rows["broken"]["error"]


def test_engines_table_and_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("context:\n  engine: lcm\n")
    assert main(["engines", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "lcm *" in out and f"selected by {config}: lcm" in out
    assert "retrieval" in out and "bundled" in out


def test_check_with_transcript_json(capsys: pytest.CaptureFixture[str], shared_transcripts: Path) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    code = main(
        [
            "check",
            "clear_tool_uses",
            "--transcript",
            str(path),
            "--limit",
            "1",
            "--json",
            "--param",
            "clear_at_least=200",
            "--threads",
            "2",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"] is True
    assert report["transcripts"][-1] == "tau-bench-0-0"
    assert {r["rule"] for r in report["rules"]} >= {"valid_output", "concurrent_clones"}


def test_check_fails_a_broken_plugin_with_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    init = """
from agent.context_engine import ContextEngine

class Engine(ContextEngine):
    @property
    def name(self):
        return "growing"
    def update_from_response(self, usage):
        pass
    def should_compress(self, prompt_tokens=None):
        return True
    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages + [{"role": "user", "content": "more " * 100}]
"""
    write_plugin(tmp_path, "growing", init)
    assert main(["check", "growing", "--plugin-path", str(tmp_path), "--threads", "2"]) == 1
    out = capsys.readouterr().out
    assert "FAIL never_grows" in out and "request 0" in out


def test_unknown_engine_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "mask_windo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("contextlab: error: unknown engine 'mask_windo'; did you mean 'mask_window'?")
    assert len(err.strip().splitlines()) == 1


def test_replay_every_engine_by_name(capsys: pytest.CaptureFixture[str], shared_transcripts: Path) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    for name in BUNDLED:
        assert main(["replay", str(path), "--index", "3", "--engine", name, "--context-length", "8000", "--json"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["engine"] == name and summary["status"] == "ok" and summary["violations"] == 0
