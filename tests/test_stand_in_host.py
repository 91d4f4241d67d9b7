"""A minimal stand-in ``agent`` package (a host ABC with only the required methods) replaces contextlab's shim.

This is the smallest real-host situation: ``agent.context_engine.ContextEngine`` is a different
class from contextlab's and lacks every optional hook. Bundled engines subclass it, and must still
load, replay and pass the conformance kit; contextlab's own engines keep loading; hook dispatch
treats what an engine inherits from either ABC as "not implemented".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

STAND_IN_ABC = '''
from abc import ABC, abstractmethod


class ContextEngine(ABC):
    """A host ABC as small as the guide's: the required methods and the attributes, nothing else."""

    last_prompt_tokens = 0
    last_completion_tokens = 0
    last_total_tokens = 0
    threshold_tokens = 0
    context_length = 0
    compression_count = 0
    threshold_percent = 0.75
    protect_first_n = 3
    protect_last_n = 6

    @property
    @abstractmethod
    def name(self): ...

    @abstractmethod
    def update_from_response(self, usage): ...

    @abstractmethod
    def should_compress(self, prompt_tokens=None): ...

    @abstractmethod
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""): ...

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode=""):
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)
'''


def _run_with_stand_in(tmp_path: Path, code: str) -> Any:
    package = tmp_path / "stand_in" / "agent"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A stand-in Hermes agent package."""\n')
    (package / "context_engine.py").write_text(STAND_IN_ABC)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "stand_in"), "TQDM_DISABLE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_engines_load_replay_and_pass_check_on_a_stand_in_host(tmp_path: Path) -> None:
    out = _run_with_stand_in(
        tmp_path,
        """
        import json, agent, agent.context_engine as ce
        from contextlab import replay
        from contextlab.conformance_data import coding_session
        from contextlab.engine import ContextEngine, overrides
        from contextlab.engines import resolve_engine
        from contextlab.plugins import Registry
        from contextlab.testing import check_engine
        registry = Registry()
        rows = {}
        for name in ("mask_window", "clear_tool_uses", "summary", "hybrid", "lcm", "compressor", "passthrough"):
            engine = registry.load(name)
            rows[name] = {
                "host_abc": isinstance(engine, ce.ContextEngine), "ours": isinstance(engine, ContextEngine),
                "select": overrides(engine, "select_context"), "observe": overrides(engine, "on_turn_complete"),
                "prune": overrides(engine, "prune_tool_results_only"),
                "status": replay("datasets/coding-agent-short.jsonl.gz", name, context_length=16000).status,
                "check": check_engine(name, transcripts=[coding_session(turns=4, loops=6)], threads=2).to_dict(),
            }
        hermes = next(i for i in registry.list() if i.name == "hermes.compressor")
        print(json.dumps({"stand_in": agent.__file__, "rows": rows,
                          "hermes": [hermes.available, hermes.error]}))
        """,
    )
    assert "stand_in" in out["stand_in"]
    rows = out["rows"]
    for name in ("mask_window", "clear_tool_uses", "summary", "hybrid", "lcm"):
        assert rows[name]["host_abc"] and not rows[name]["ours"], name
    for name in ("compressor", "passthrough"):
        assert rows[name]["ours"] and not rows[name]["host_abc"], name
    for name, row in rows.items():
        assert row["status"] == "ok", name
        assert row["check"]["ok"], (name, row["check"]["failures"])
    assert rows["mask_window"]["select"] and not rows["mask_window"]["observe"]
    assert rows["clear_tool_uses"]["prune"] and not rows["clear_tool_uses"]["select"]
    assert not any(rows["passthrough"][k] for k in ("select", "observe", "prune"))
    # The stand-in has no compressor: hermes.compressor is listed unavailable, with one line saying why.
    available, error = out["hermes"]
    assert available is False
    assert "agent.context_compressor" in error and "contextlab[hermes]" in error and "\\n" not in error
