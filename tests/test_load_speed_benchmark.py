"""The load-speed benchmark script runs (a smoke test; its timings are not asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest


def test_load_speed_script_runs(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "openai"
    folder.mkdir()
    (folder / "chat.json").write_text(
        json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
    )
    spec = importlib.util.spec_from_file_location("load_speed", repo / "benchmarks" / "load_speed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([str(tmp_path), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "openai" in out and "overall ratio" in out
