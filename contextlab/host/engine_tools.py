"""Engine tools answered live: when the recorded model called one of the engine's own tools
(``lcm_grep``, ...), the host dispatches it to ``handle_tool_call`` and sends the engine's answer in
place of the recorded result (``HostSettings(engine_tools="live")``; ``docs/host-loop.md`` §Engine
tools)."""

from __future__ import annotations

import json
from typing import Any

from contextlab.engine import ContextEngine, Message


def tool_names(schemas: list[dict[str, Any]]) -> frozenset[str]:
    """Names in ``get_tool_schemas()`` output (flat ``{"name": ...}`` or OpenAI ``{"function": {...}}``)."""
    names: set[str] = set()
    for schema in schemas:
        function = schema.get("function")
        name = function.get("name") if isinstance(function, dict) else schema.get("name")
        if isinstance(name, str) and name:
            names.add(name)
    return frozenset(names)


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict (a JSON string, a dict, or anything else as ``{}``)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


class EngineToolRouter:
    """Replaces recorded results of the engine's own tools with the engine's live answers."""

    def __init__(self, engine: ContextEngine, names: frozenset[str]) -> None:
        self._engine = engine
        self.names = names

    def calls_to_answer(self, assistant: Message) -> dict[str, tuple[str, dict[str, Any]]]:
        """``{tool_call_id: (name, args)}`` for the engine's tools this assistant message called."""
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        for call in assistant.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if not isinstance(function, dict):
                continue
            name = function.get("name")
            call_id = call.get("id")
            if isinstance(name, str) and name in self.names and isinstance(call_id, str):
                found[call_id] = (name, _arguments(function.get("arguments")))
        return found

    def answer(self, name: str, args: dict[str, Any], messages: list[Message]) -> str:
        """The engine's answer, as the host gets it: an exception becomes an error JSON string."""
        try:
            result = self._engine.handle_tool_call(name, args, messages=messages)
        except Exception as error:
            return json.dumps({"error": f"Context engine tool '{name}' failed: {error}"})
        return result if isinstance(result, str) else json.dumps(result, default=str)
