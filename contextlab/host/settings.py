"""Host settings: everything the simulated host needs that is not in the transcript or the engine."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

from contextlab.errors import ConfigError
from contextlab.host.usage_model import USAGE_MODELS
from contextlab.host.versions import ATTEMPTS_0_19_0, host_rules
from contextlab.tokens import DEFAULT_ENCODING

ENGINE_TOOL_MODES = ("recorded", "live")
"""How the results of an engine's own tools are replayed (``docs/host-loop.md`` §Engine tools)."""

TOOL_RESULT_MODES = ("host", "recorded")
"""How recorded tool outputs join the history (``docs/host-loop.md`` §Tool results)."""

MAX_ATTEMPTS_CAP = 10


@dataclass(frozen=True)
class HostSettings:
    """How the simulated host is configured (the real host's defaults unless noted).

    Attributes:
        context_length: The model window passed to ``update_model`` (tokens).
        model: Model name passed to ``update_model``; default: the transcript's, else ``"gpt-4o"``.
        provider: Provider name passed to ``update_model`` (used by provider-scoped thresholds).
        base_url: The endpoint's base URL passed to ``update_model``. With ``provider`` and the model
            it names the route, which decides whether assistant reasoning is echoed back
            (DeepSeek, Kimi, MiMo) or never sent (:mod:`contextlab.reasoning`).
        threshold_percent: When set, assigned to ``engine.threshold_percent`` before ``update_model``.
        model_thresholds: Assigned to ``engine.model_thresholds`` before ``update_model``, as the host does.
        compression_enabled: ``compression.enabled``; False disables every compaction gate.
        max_attempts: ``compression.max_attempts`` (floor 1, cap 10): compactions per turn.
        compress_timeout_s: ``compression.context_timeout_seconds``; a slower pass is discarded.
        system_prompt: Overrides the transcript's system prompt.
        tools: Overrides the transcript's tool schemas (the engine's own tools are always added).
        fixed_overhead_tokens: Prompt tokens a recording omits (an unseen system prompt or tool
            schemas), added to every request's exact and rough counts.
        strict_select_context: Also reject ``select_context`` results that inject or swap system
            messages or carry tool rows without ``tool_call_id`` (the host tests' strict variant).
        encoding: tiktoken encoding for exact counts.
        seed: Seeds uid minting (and anything else random), for byte-identical traces.
        request_gap_s: Virtual seconds between requests when the transcript has no timestamps.
        session_id: Session id given to ``on_session_start``; default derived from the transcript.
        tool_loop_warnings: The host's tool-loop warnings (``tool_loop_guardrails.warnings_enabled``,
            default on): a warning in a tool row after repeated failures or a repeated read within a
            turn (:mod:`contextlab.host.tool_guard`). Only where the host makes the tool rows
            (``tool_results="host"``, not a Hermes recording); so are the stall guards.
        stall_guards: The host's stall guards (``agent.stall_guards``, default on): a notice from the
            3rd identical call in a row, a stub in place of a repeated identical output.
        session_store: The host keeps a session store (the CLI's and the gateway's ``SessionDB``;
            default): each committed compaction then hands the engine the history before the pass
            (``commit_memory_session`` calls ``on_session_end``) ahead of the boundary's
            ``on_session_start``. False: a bare ``AIAgent`` without one.
        hermes_home: The directory given to ``on_session_start`` as ``hermes_home`` (where the real
            host's engines keep their files); default: a fresh temporary directory per replay,
            removed when it ends (:class:`contextlab.host.home.EngineHome`).
        manual_compactions: ``{turn index: focus topic or None}``: a ``/compress`` before that turn.
        engine_tools: ``"recorded"`` (default: the recorded results of the engine's own tools stay,
            so every engine replays the same conversation) or ``"live"`` (the host calls
            ``handle_tool_call`` and sends the engine's answer instead; ``docs/host-loop.md``).
        usage_model: The prompt tokens reported back to the engine: ``"exact"`` (default),
            ``"rough"`` (the host's rough estimate) or ``"recorded"`` (see :mod:`contextlab.host.usage_model`).
        tool_results: ``"host"`` (default: the host makes its rows from the recorded outputs as it
            makes them from a tool's: ``name``, untrusted-data wrapping, oversized outputs spilled to a
            preview; :mod:`contextlab.host.tool_results`) or ``"recorded"`` (the recorded rows as
            they are). A Hermes recording's rows are already the host's and are never made again.
        hermes_version: The Hermes host the loop follows: ``"newest"`` (default: newer upstream
            ``NousResearch/hermes-agent``) or ``"0.19.0"`` (PyPI ``hermes-agent`` 0.19.0, whose gates
            measure pressure with a rough estimate alone; :mod:`contextlab.host.versions`). The
            compressor port follows it unless its own ``hermes_rules`` parameter is given.
    """

    context_length: int = 200_000
    model: str | None = None
    provider: str = ""
    base_url: str = ""
    threshold_percent: float | None = None
    model_thresholds: dict[str, float] = field(default_factory=dict)
    compression_enabled: bool = True
    max_attempts: int = 3
    compress_timeout_s: float = 120.0
    system_prompt: str | None = None
    tools: list[dict[str, Any]] | None = None
    fixed_overhead_tokens: int = 0
    strict_select_context: bool = False
    encoding: str = DEFAULT_ENCODING
    seed: int = 0
    request_gap_s: float = 30.0
    session_id: str | None = None
    hermes_home: str | None = None
    session_store: bool = True
    tool_loop_warnings: bool = True
    stall_guards: bool = True
    manual_compactions: dict[int, str | None] = field(default_factory=dict)
    engine_tools: str = "recorded"
    usage_model: str = "exact"
    tool_results: str = "host"
    hermes_version: str = "newest"

    def __post_init__(self) -> None:
        for switch in fields(self):
            # A sweep file's `session_store: maybe` would otherwise pass as true.
            value = getattr(self, switch.name)
            if switch.type == "bool" and not isinstance(value, bool):
                raise ConfigError(f"{switch.name} must be true or false, got {value!r}")
        if self.context_length <= 0:
            raise ConfigError(f"context_length must be positive, got {self.context_length}")
        if self.threshold_percent is not None and not 0 < self.threshold_percent <= 1:
            raise ConfigError(f"threshold_percent must be in (0, 1], got {self.threshold_percent}")
        if self.compress_timeout_s <= 0:
            raise ConfigError(f"compress_timeout_s must be positive, got {self.compress_timeout_s}")
        if self.fixed_overhead_tokens < 0:
            raise ConfigError(f"fixed_overhead_tokens must be >= 0, got {self.fixed_overhead_tokens}")
        if self.hermes_home is not None and not os.path.isdir(self.hermes_home):
            raise ConfigError(f"hermes_home is not a directory: {self.hermes_home}")
        if self.engine_tools not in ENGINE_TOOL_MODES:
            raise ConfigError(f"engine_tools must be one of {', '.join(ENGINE_TOOL_MODES)}, got {self.engine_tools!r}")
        if self.tool_results not in TOOL_RESULT_MODES:
            raise ConfigError(f"tool_results must be one of {', '.join(TOOL_RESULT_MODES)}, got {self.tool_results!r}")
        host_rules(self.hermes_version)  # one line naming the versions when it is none of them
        if self.usage_model not in USAGE_MODELS:
            raise ConfigError(f"usage_model must be one of {', '.join(USAGE_MODELS)}, got {self.usage_model!r}")
        # The host parses max_attempts with a floor of 1 and a hard cap of 10.
        object.__setattr__(self, "max_attempts", max(1, min(MAX_ATTEMPTS_CAP, int(self.max_attempts))))

    @property
    def attempts_per_turn(self) -> int:
        """The compaction passes a turn may run: ``max_attempts``, except on a host without that
        setting (0.19.0 always allows 3)."""
        return self.max_attempts if host_rules(self.hermes_version).max_attempts_setting else ATTEMPTS_0_19_0

    def with_(self, **changes: Any) -> HostSettings:
        """A copy with some fields changed (validated again)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(f"unknown host setting(s): {', '.join(unknown)}")
        return replace(self, **changes)

    def label(self) -> str:
        """A short, stable id of the settings that usually vary in a sweep."""
        parts = [f"ctx={self.context_length}"]
        if self.threshold_percent is not None:
            parts.append(f"pct={self.threshold_percent:g}")
        if self.fixed_overhead_tokens:
            parts.append(f"overhead={self.fixed_overhead_tokens}")
        if self.engine_tools != "recorded":
            parts.append(f"engine_tools={self.engine_tools}")
        if self.usage_model != "exact":
            parts.append(f"usage={self.usage_model}")
        if self.provider:  # the route (with the model, a column of its own) decides what reasoning is sent
            parts.append(f"provider={self.provider}")
        if self.base_url:
            parts.append(f"base_url={self.base_url}")
        if self.hermes_version != "newest":
            parts.append(f"hermes={self.hermes_version}")
        return ",".join(parts)
