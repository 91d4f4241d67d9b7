"""The engine's own tools: how the host adds them to the tool list at start-up, and, when the
recorded model called one of them (``lcm_grep``, ...), how it dispatches the call to
``handle_tool_call`` and sends the engine's answer in place of the recorded result
(``HostSettings(engine_tools="live")``; ``docs/host-loop.md`` §Engine tools)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contextlab.engine import ContextEngine, Message
from contextlab.tool_arguments import parsed_arguments


def host_schema(schema: Any) -> dict[str, Any] | None:
    """``schema`` as the host takes it from ``get_tool_schemas()``: the bare function schema (an entry
    already in OpenAI form is unwrapped), or None when it has no usable ``name`` (the host skips it).
    (``normalize_tool_schema``, ``agent/memory_manager.py``, PyPI ``hermes-agent`` 0.19.0.)"""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
        schema = schema["function"]
    name = schema.get("name")
    return schema if isinstance(name, str) and name else None


def _listed_name(tool: Any) -> Any:
    """The name the host reads off a tool already in its list (only the OpenAI form has one)."""
    function = tool.get("function") if isinstance(tool, dict) else None
    return function.get("name") if isinstance(function, dict) else None


@dataclass(frozen=True)
class InjectedTools:
    """The tool list after the host added the engine's schemas."""

    tools: list[dict[str, Any]]
    """The base tools, then each new engine schema wrapped as ``{"type": "function", "function": ...}``."""
    names: frozenset[str]
    """Every name the engine declared, including those the list already had."""
    skipped: tuple[str, ...]
    """One line for each schema the host skipped because it has no name."""


def inject_engine_tools(base: list[dict[str, Any]], schemas: Iterable[Any]) -> InjectedTools:
    """The host's start-up injection of ``get_tool_schemas()`` output into the tool list: each schema
    normalized (:func:`host_schema`), a nameless one skipped, a name the list already holds left out
    (the list keeps its own entry), the rest wrapped and appended in order. (Agent init, the
    context-engine tools block: PyPI ``hermes-agent`` 0.19.0 ``agent/agent_init.py``;
    ``NousResearch/hermes-agent`` ``agent/agent_init.py`` @``00035936``, the same rules.)"""
    tools = list(base)
    present = {_listed_name(tool) for tool in tools}
    names: set[str] = set()
    skipped: list[str] = []
    for position, raw in enumerate(schemas):
        schema = host_schema(raw)
        if schema is None:
            skipped.append(
                f"engine tool schema {position} has no name the host can read; the host skips it: {raw!r:.120}"
            )
            continue
        name = schema["name"]
        names.add(name)
        if name in present:
            continue
        tools.append({"type": "function", "function": schema})
        present.add(name)
    return InjectedTools(tools, frozenset(names), tuple(skipped))


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
                found[call_id] = (name, parsed_arguments(function.get("arguments")))
        return found

    def answer(self, name: str, args: dict[str, Any], messages: list[Message]) -> str:
        """The engine's answer, as the host gets it: an exception becomes an error JSON string."""
        try:
            result = self._engine.handle_tool_call(name, args, messages=messages)
        except Exception as error:
            return json.dumps({"error": f"Context engine tool '{name}' failed: {error}"})
        return result if isinstance(result, str) else json.dumps(result, default=str)
