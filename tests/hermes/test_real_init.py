"""The host's start-up, as the real 0.19.0 ``AIAgent`` runs it and as contextlab runs it.

A plugin engine built on the real host's ABC records what it is told. The real agent is built
against a local OpenAI-compatible server (``real_loop.provider``) that reports the window, with the
recording's tools in its registry; contextlab replays the same recording with a fresh copy of the
engine. Both must call ``update_model``, then ``get_tool_schemas``, then ``on_session_start`` with the
same keyword arguments, and add the engine's schemas to the tool list the same way (an OpenAI-form
entry unwrapped, a nameless one skipped, a name already listed left out, the rest wrapped). Below
the host's minimum window the real agent refuses to start; contextlab replays and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hermes.conftest import run_python

SETUP = """
import json, os, sys, tempfile, threading
from collections import deque
os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-home-")
from agent.context_engine import ContextEngine
from contextlab import load_dataset, replay
from tests.hermes.real_loop import provider, register_recorded_tools

SCHEMAS = [
    {"name": "probe_grep", "description": "Search.", "parameters": {"type": "object", "properties": {}}},
    {"type": "function", "function": {"name": "probe_expand", "description": "Expand.", "parameters": {}}},
    {"description": "no name at all"},
    {"type": "function", "function": {"description": "wrapped, no name"}},
    "not a schema",
    {"name": "read_file", "description": "The recording has a tool of this name already."},
    {"name": "probe_grep", "description": "A second schema of a name the engine gave already."},
]


class Probe(ContextEngine):
    def __init__(self):
        super().__init__()
        self.calls = []

    @property
    def name(self):
        return "probe"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, **kwargs):
        return messages

    def update_model(self, model, context_length, *args, **kwargs):
        self.calls.append(["update_model", context_length])
        super().update_model(model, context_length, *args, **kwargs)

    def get_tool_schemas(self):
        self.calls.append(["get_tool_schemas"])
        return json.loads(json.dumps(SCHEMAS))

    def on_session_start(self, session_id, **kwargs):
        home = kwargs.get("hermes_home")
        self.calls.append(["on_session_start", sorted(kwargs), kwargs.get("platform"), kwargs.get("model"),
                           kwargs.get("context_length"), kwargs.get("conversation_id"),
                           isinstance(home, str) and os.path.isdir(home)])


def real_agent(window):
    transcript = load_dataset("coding-agent-short")
    server = provider(deque(), window, [], [], [])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    register_recorded_tools(transcript)
    import plugins.context_engine as engines
    engine = Probe()
    engines.load_context_engine = lambda name: engine if name == "probe" else None
    with open(os.path.join(os.environ["HERMES_HOME"], "config.yaml"), "w") as config:
        config.write("context:\\n  engine: probe\\n")
    from run_agent import AIAgent
    agent = AIAgent(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="unused",
                    model="gpt-4o", quiet_mode=True, skip_context_files=True, skip_memory=True,
                    enabled_toolsets=["replay", "context_engine"], max_iterations=5, tool_delay=0)
    return transcript, agent, engine


class FirstTools:
    def __init__(self):
        self.tools = None
    def columns(self):
        return []
    def observe(self, view):
        if self.tools is None:
            self.tools = json.loads(json.dumps(list(view.tools)))
        return {}
    def summary(self):
        return {}
    def clone(self):
        return self
"""


def test_start_up_calls_and_engine_tools_are_the_real_hosts(hermes_python: Path) -> None:
    out: dict[str, Any] = run_python(
        hermes_python,
        SETUP
        + """
transcript, agent, engine = real_agent(128000)
base = len(agent.tools) - len(agent._context_engine_tool_names)
real = {"calls": engine.calls, "added": agent.tools[base:], "names": sorted(agent._context_engine_tool_names)}
first = FirstTools()
result = replay(transcript, Probe(), context_length=128000, observers=[first], probes=False)
ours = {"calls": [c for c in result.engine.calls], "added": first.tools[len(transcript.tools):],
        "warnings": result.warnings}
print(json.dumps({"real": real, "ours": ours}))
""",
    )
    real, ours = out["real"], out["ours"]
    assert [c[0] for c in real["calls"]] == ["update_model", "get_tool_schemas", "on_session_start"]
    assert ours["calls"] == real["calls"]
    start = real["calls"][2]
    assert start[1] == ["context_length", "conversation_id", "hermes_home", "model", "platform"]
    assert start[2:] == ["cli", "gpt-4o", 128000, None, True]
    assert real["names"] == ["probe_expand", "probe_grep"]  # read_file was listed already
    assert [t["function"]["name"] for t in real["added"]] == ["probe_grep", "probe_expand"]
    assert ours["added"] == real["added"]
    assert sum("no name the host can read" in w for w in ours["warnings"]) == 3


def test_the_real_host_refuses_a_small_window_and_a_replay_says_so(hermes_python: Path) -> None:
    out: dict[str, Any] = run_python(
        hermes_python,
        SETUP
        + """
try:
    real_agent(32000)
    refused = ""
except ValueError as error:
    refused = str(error)
transcript = load_dataset("coding-agent-short")
small = replay(transcript, "passthrough", context_length=32000, probes=False)
large = replay(transcript, "passthrough", context_length=64000, probes=False)
print(json.dumps({"refused": refused, "small": small.summary["window_note"], "large": large.summary["window_note"],
                  "small_ok": small.status, "warned": small.summary["window_note"] in small.warnings}))
""",
    )
    assert "below the minimum 64,000" in out["refused"]
    assert out["small"] == "the real host refuses a window under 64,000 tokens; this replay runs 32,000"
    assert out["small_ok"] == "ok" and out["warned"]
    assert out["large"] == ""
