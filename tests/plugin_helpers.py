"""Test helpers: install the fake plugin distribution once, write plugin folders."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

FAKE_DIST = Path(__file__).resolve().parent / "fake_plugin_dist"

_installed: dict[str, Path] = {}


def install_fake_dist(base: Path) -> Path:
    """``pip install --no-build-isolation --no-deps --target`` the fake distribution (offline).

    Built from a copy so the source tree stays clean; the target folder is what tests put on
    ``sys.path`` (``importlib.metadata`` finds its ``.dist-info`` there).
    """
    if "target" in _installed:
        return _installed["target"]
    source = base / "src"
    shutil.copytree(FAKE_DIST, source)
    target = base / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    _installed["target"] = target
    return target


HOST_GUIDE_PLUGIN = '''\
import json

from agent.context_engine import ContextEngine


class LCMEngine(ContextEngine):

    def __init__(self, context_length=200000):
        self.context_length = context_length
        self.threshold_tokens = int(context_length * 0.75)

    @property
    def name(self) -> str:
        """Short identifier, e.g. 'lcm'. Must match config.yaml value."""
        return "guide_lcm"

    def update_from_response(self, usage: dict) -> None:
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)
        self.last_completion_tokens = usage.get("completion_tokens", 0)
        self.last_total_tokens = usage.get("total_tokens", 0)

    def should_compress(self, prompt_tokens: int = None) -> bool:
        return (prompt_tokens or self.last_prompt_tokens) >= self.threshold_tokens

    def compress(self, messages: list, current_tokens: int = None,
                 focus_topic: str = None) -> list:
        return messages

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
            return json.dumps({"results": []})
        return json.dumps({"error": f"Unknown tool: {name}"})


def register(ctx):
    engine = LCMEngine(context_length=200000)
    ctx.register_context_engine(engine)
'''


def write_plugin(root: Path, name: str, init: str, meta: str | None = None, **files: str) -> Path:
    """Write ``root/name/__init__.py`` and ``plugin.yaml`` (default metadata when ``meta`` is None)."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(textwrap.dedent(init), encoding="utf-8")
    if meta is None:
        meta = f"name: {name}\ndescription: test plugin {name}\nversion: 1.2.3\n"
    (folder / "plugin.yaml").write_text(meta, encoding="utf-8")
    for filename, text in files.items():
        (folder / filename).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder
