"""The ContextEngine ABC matches the host contract, and host plugins import it unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import contextlab
from contextlab.engine import ContextEngine, overrides
from tests.toy_engines import BaseToy, RecordingEngine

# ---------------------------------------------------------------- a plugin written exactly as the guide shows

GUIDE_PLUGIN = '''
import json

from agent.context_engine import ContextEngine


class LCMEngine(ContextEngine):

    def __init__(self, context_length=200000):
        self.context_length = context_length

    @property
    def name(self) -> str:
        """Short identifier, e.g. 'lcm'. Must match config.yaml value."""
        return "lcm"

    def update_from_response(self, usage: dict) -> None:
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)
        self.last_completion_tokens = usage.get("completion_tokens", 0)
        self.last_total_tokens = usage.get("total_tokens", 0)

    def should_compress(self, prompt_tokens: int = None) -> bool:
        return False

    def compress(self, messages: list, current_tokens: int = None,
                 focus_topic: str = None) -> list:
        return list(messages)

    def get_tool_schemas(self):
        return [{
            "name": "lcm_grep",
            "description": "Search the context knowledge graph",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Search query"}
                },
                "required": ["query"],
            },
        }]

    def handle_tool_call(self, name, args, **kwargs):
        if name == "lcm_grep":
            return json.dumps({"results": [args["query"]]})
        return json.dumps({"error": f"Unknown tool: {name}"})


def register(ctx):
    engine = LCMEngine(context_length=200000)
    ctx.register_context_engine(engine)
'''


@pytest.fixture()
def guide_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    package = tmp_path / "guide_lcm"
    package.mkdir()
    (package / "__init__.py").write_text(GUIDE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("guide_lcm")
    yield module
    sys.modules.pop("guide_lcm", None)


# The plugin guide's own two test examples, verbatim apart from the engine name.
def test_engine_satisfies_abc(guide_plugin: Any) -> None:
    engine = guide_plugin.LCMEngine(context_length=200000)
    assert isinstance(engine, ContextEngine)
    assert engine.name == "lcm"


def test_compress_returns_valid_messages(guide_plugin: Any) -> None:
    engine = guide_plugin.LCMEngine(context_length=200000)
    msgs = [{"role": "user", "content": "hello"}]
    result = engine.compress(msgs)
    assert isinstance(result, list)
    assert all("role" in m for m in result)


def test_guide_plugin_replays_and_exposes_its_tools(guide_plugin: Any) -> None:
    from contextlab.examples import tool_conversation

    class Ctx:
        engine: Any = None

        def register_context_engine(self, engine: Any) -> None:
            self.engine = engine

    ctx = Ctx()
    guide_plugin.register(ctx)
    result = contextlab.replay(tool_conversation(3), ctx.engine)
    assert result.status == "ok"
    assert json.loads(ctx.engine.handle_tool_call("lcm_grep", {"query": "x"})) == {"results": ["x"]}
    assert "error" in json.loads(ctx.engine.handle_tool_call("nope", {}))
    # The engine's tool schema is sent with every request (it costs prompt tokens).
    without = contextlab.replay(tool_conversation(3), "passthrough")
    assert (result.trace["prompt_tokens"] > without.trace["prompt_tokens"]).all()


def test_agent_shim_is_contextlabs_abc() -> None:
    from agent.context_engine import ContextEngine as HostABC

    assert HostABC is ContextEngine


def test_agent_shim_never_shadows_a_real_host(tmp_path: Path) -> None:
    real = tmp_path / "agent"
    real.mkdir()
    (real / "__init__.py").write_text("REAL = True\n")
    (real / "context_engine.py").write_text("class ContextEngine:\n    FROM_REAL_HOST = True\n")
    code = textwrap.dedent(
        """
        import contextlab
        from agent.context_engine import ContextEngine
        import agent
        print(getattr(ContextEngine, "FROM_REAL_HOST", False), getattr(agent, "REAL", False))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


# ---------------------------------------------------------------- defaults and base behaviour


def test_abc_defaults_match_the_host() -> None:
    engine = BaseToy()
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens) == (0, 0, 0)
    assert engine.compression_count == 0
    assert ContextEngine.threshold_percent == 0.75
    assert (ContextEngine.protect_first_n, ContextEngine.protect_last_n) == (3, 6)
    assert ContextEngine.emit_automatic_compaction_status is True
    assert engine.select_context([{"role": "user", "content": "x"}]) is None
    assert engine.on_turn_complete([]) is None
    msgs = [{"role": "user", "content": "x"}]
    assert engine.prune_tool_results_only(msgs) == (msgs, 0)
    assert engine.prune_tool_results_only(msgs)[0] is msgs
    assert engine.should_compress_preflight(msgs) is False
    assert engine.should_defer_preflight_to_real_usage(10) is False
    assert engine.pending_compression_operation(msgs) is None
    assert engine.has_content_to_compress(msgs) is True
    assert engine.get_tool_schemas() == []
    assert "Unknown" in json.loads(engine.handle_tool_call("x", {}))["error"]
    assert engine.should_compress_info(10**10) == (True, None)
    assert engine.get_automatic_compaction_status_message(phase="pre_api", default_message="m") == "m"
    engine.emit_automatic_compaction_status = False
    assert engine.get_automatic_compaction_status_message(phase="pre_api", default_message="m") is None


def test_get_status_clamps_the_sentinel_and_computes_usage_percent() -> None:
    engine = BaseToy()
    engine.context_length = 200_000
    engine.last_prompt_tokens = 50_000
    status = engine.get_status()
    assert set(status) == {
        "last_prompt_tokens",
        "threshold_tokens",
        "context_length",
        "usage_percent",
        "compression_count",
    }
    assert status["usage_percent"] == 25.0
    assert 0 < status["usage_percent"] <= 100
    engine.last_prompt_tokens = -1
    assert engine.get_status()["last_prompt_tokens"] == 0
    engine.context_length = 0
    assert engine.get_status()["usage_percent"] == 0


def test_session_reset_zeroes_tokens_and_count() -> None:
    engine = BaseToy()
    engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens = 10, 20, 30
    engine.compression_count = 4
    engine.on_session_reset()
    assert (
        engine.last_prompt_tokens,
        engine.last_completion_tokens,
        engine.last_total_tokens,
        engine.compression_count,
    ) == (0, 0, 0, 0)


class _Plain(ContextEngine):
    name = "plain"  # type: ignore[assignment]

    def update_from_response(self, usage: dict[str, Any]) -> None:
        pass

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        return messages


def test_update_model_uses_the_configured_percent_and_longest_override() -> None:
    engine = _Plain()
    engine.threshold_percent = 0.5
    engine.update_model("gpt-4o", 200_000)
    assert engine.threshold_tokens == 100_000
    engine.model_thresholds = {"gpt": 0.6, "gpt-4o": 0.7, "openrouter:gpt-4o": 0.9}  # type: ignore[attr-defined]
    engine.update_model("gpt-4o-mini", 100_000)
    assert engine.threshold_tokens == 70_000  # longest unscoped match
    engine.update_model("gpt-4o-mini", 100_000, provider="openrouter")
    assert engine.threshold_tokens == 90_000  # provider-scoped keys win for their provider
    engine.model_thresholds = {}  # type: ignore[attr-defined]
    engine.update_model("other", 100_000)
    assert engine.threshold_tokens == 50_000  # the snapshot of the configured percent never compounds


def test_clone_for_agent_gives_an_independent_copy() -> None:
    engine = _Plain()
    engine.update_model("m", 100_000)
    clone = engine.clone_for_agent()
    clone.update_model("m", 500_000)
    assert engine.context_length == 100_000  # a child's update_model must not change the parent (#42449)


def test_overrides_detects_only_real_overrides() -> None:
    assert not overrides(BaseToy(), "select_context")
    assert overrides(RecordingEngine(), "on_turn_complete")
    assert not overrides(RecordingEngine(), "prune_tool_results_only")


def test_public_api_is_explicit() -> None:
    for name in contextlab.__all__:
        assert hasattr(contextlab, name), name
