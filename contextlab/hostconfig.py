"""The host's ``config.yaml``, read the way the host reads the parts that shape a replay.

``--config config.yaml`` (and :func:`load_host_config`) maps these keys; everything else in the
file (providers, tools, platforms...) is ignored, as it does not change what a replay decides:

=================================  ==============================================================
``context.engine``                 the engine, when none is named on the command line
``model.default`` (or ``model``)   ``HostSettings.model`` when ``--model`` is not given
``model.provider``                 ``HostSettings.provider``
``model.base_url``                 ``HostSettings.base_url`` (with the provider and model: the reasoning route)
``model.context_length``           ``HostSettings.context_length`` when ``--context-length`` is not given
``compression.enabled``            ``HostSettings.compression_enabled`` (every engine)
``compression.threshold``          the compressor's ``threshold_percent``
``compression.target_ratio``       the compressor's ``summary_target_ratio``
``compression.protect_first_n``    the compressor's ``protect_first_n``
``compression.protect_last_n``     the compressor's ``protect_last_n``
``compression.abort_on_summary_failure``  the compressor's ``abort_on_summary_failure``
``compression.micro_compact``      the compressor's ``micro_compact`` (default off)
``compression.micro_compact_every_n_turns``  the compressor's ``micro_compact_every_n_turns``
``compression.micro_compact_defrag_threshold_tokens``  its ``micro_compact_defrag_threshold_tokens``
=================================  ==============================================================

The ``compression.*`` engine keys reach only the built-in compressor (``compressor`` and
``hermes.compressor``): the host passes them to its ``ContextCompressor`` constructor and never to a
plugin engine (``docs/engine-authors.md`` cites where). ``--param`` wins over the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.yaml_file import read_yaml

COMPRESSOR_ENGINES = frozenset({"compressor", "hermes.compressor"})
"""Engines the host configures from ``compression.*`` (its built-in ``ContextCompressor``)."""

_COMPRESSOR_KEYS: dict[str, tuple[str, type]] = {
    "threshold": ("threshold_percent", float),
    "target_ratio": ("summary_target_ratio", float),
    "protect_first_n": ("protect_first_n", int),
    "protect_last_n": ("protect_last_n", int),
    "abort_on_summary_failure": ("abort_on_summary_failure", bool),
    "micro_compact": ("micro_compact", bool),
    "micro_compact_every_n_turns": ("micro_compact_every_n_turns", int),
    "micro_compact_defrag_threshold_tokens": ("micro_compact_defrag_threshold_tokens", int),
}
PORT_ONLY_KEYS = frozenset({"micro_compact", "micro_compact_every_n_turns", "micro_compact_defrag_threshold_tokens"})
"""Compressor parameters of newer hosts than the packaged one: the ``compressor`` port only."""


@dataclass(frozen=True)
class HostConfig:
    """What a host ``config.yaml`` says about a replay.

    Attributes:
        path: The file it was read from.
        engine: ``context.engine`` (the host's default ``compressor`` when absent).
        settings: ``HostSettings`` field → value, applied where the command line left the default.
        compressor_params: Constructor parameters for the built-in compressor.
    """

    path: Path
    engine: str = "compressor"
    settings: dict[str, Any] = field(default_factory=dict)
    compressor_params: dict[str, Any] = field(default_factory=dict)

    def apply(self, settings: HostSettings, *, explicit: Collection[str] = ()) -> HostSettings:
        """``settings`` with this file's values, except the fields named in ``explicit``."""
        changes = {k: v for k, v in self.settings.items() if k not in explicit}
        return dataclasses.replace(settings, **changes) if changes else settings

    def params_for(self, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        """Engine parameters: the file's compressor keys (for the compressor only) under ``params``."""
        if engine not in COMPRESSOR_ENGINES:
            return dict(params)
        mine = self.compressor_params
        if engine != "compressor":
            # The real host of ``hermes.compressor`` (PyPI 0.19.0) predates micro-compaction.
            mine = {k: v for k, v in mine.items() if k not in PORT_ONLY_KEYS}
        return {**mine, **params}


def load_host_config(path: str | Path) -> HostConfig:
    """Read a host ``config.yaml``.

    Raises:
        ConfigError: Unreadable file, bad YAML, or a mapped key of the wrong type (file and key named).
    """
    path = Path(path)
    data = read_yaml(path)
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    context = _section(data, "context", path)
    engine = context.get("engine", "compressor") or "compressor"
    if not isinstance(engine, str) or not engine.strip():
        raise ConfigError(f"{path}: context.engine must be a non-empty string, got {engine!r}")
    settings: dict[str, Any] = {}
    model = data.get("model")
    model_section = model if isinstance(model, dict) else {}
    if isinstance(model, str) and model.strip():
        settings["model"] = model.strip()
    elif model is not None and not isinstance(model, dict):
        raise ConfigError(f"{path}: model must be a model name or a mapping, got {type(model).__name__}")
    if isinstance(model_section.get("default"), str) and model_section["default"].strip():
        settings["model"] = model_section["default"].strip()
    for key in ("provider", "base_url"):
        value = model_section.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{path}: model.{key} must be a string, got {type(value).__name__}")
        if isinstance(value, str):
            settings[key] = value.strip()
    if model_section.get("context_length") is not None:
        settings["context_length"] = _typed(model_section["context_length"], int, path, "model.context_length")
        if settings["context_length"] <= 0:
            raise ConfigError(f"{path}: model.context_length must be positive, got {settings['context_length']}")
    guardrails = _section(data, "tool_loop_guardrails", path)
    if guardrails.get("warnings_enabled") is not None:
        flag = "tool_loop_guardrails.warnings_enabled"
        settings["tool_loop_warnings"] = _typed(guardrails["warnings_enabled"], bool, path, flag)
    agent = _section(data, "agent", path)
    if agent.get("stall_guards") is not None:
        settings["stall_guards"] = _typed(agent["stall_guards"], bool, path, "agent.stall_guards")
    compression = _section(data, "compression", path)
    if "enabled" in compression:
        settings["compression_enabled"] = _typed(compression["enabled"], bool, path, "compression.enabled")
    params: dict[str, Any] = {}
    for key, (param, kind) in _COMPRESSOR_KEYS.items():
        if compression.get(key) is not None:
            params[param] = _typed(compression[key], kind, path, f"compression.{key}")
    threshold = params.get("threshold_percent")
    if threshold is not None and not 0 < threshold <= 1:
        raise ConfigError(f"{path}: compression.threshold must be a fraction in (0, 1], got {threshold}")
    return HostConfig(path, engine.strip(), settings, params)


def _section(data: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {name!r} must be a mapping, got {type(value).__name__}")
    return value


def _typed(value: Any, kind: type, path: Path, key: str) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ConfigError(f"{path}: {key} must be {'a boolean' if kind is bool else 'a number'}, got {value!r}")
