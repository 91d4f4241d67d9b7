"""The sweep config file (``contextlab bench CONFIG.yaml``): one key per :func:`contextlab.bench.bench` argument.

.. code-block:: yaml

    transcripts: [coding-agent, datasets/support-agent.jsonl.gz, "../shared/transcripts/tau-bench-airline/*.json"]
    limit: 20                     # first N conversations only
    engines:
      - passthrough
      - name: compressor          # an engine with its own grid (scoped keys)
        grid: {threshold_percent: [0.5, 0.75]}
    grid: {context_length: [64000, 128000]}
    settings: {fixed_overhead_tokens: 2000}
    params: {}
    cache: [anthropic:claude-sonnet-5-5]
    cache_policy: system_and_3
    probes: true                  # false: no retention/loss columns and frames, a faster sweep
    workers: 2
    executor: local               # or dask
    scheduler: null               # tcp://host:8786 with executor dask
    run_timeout: 600
    out: runs/my-sweep
    format: parquet

Every key is validated before anything runs; an unknown key is an error naming the file and the key,
with the closest valid key suggested. The resolved config is saved as ``config.yaml`` beside the outputs.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.registry import suggest
from contextlab.yaml_file import read_yaml

DEFAULT_DATASETS: tuple[str, ...] = ("coding-agent-short", "support-agent", "coding-agent")
"""The bundled datasets the no-argument sweep replays."""

DEFAULT_WINDOWS: tuple[int, ...] = (64_000, 128_000)
"""Windows of the no-argument sweep: the bundled sessions (250K and 1.2M content tokens) cross them."""

DEFAULT_CACHE = "anthropic:claude-sonnet-5-5"

_HOST_FIELDS = {f.name for f in fields(HostSettings)}


@dataclass
class BenchConfig:
    """A sweep, as written in a config file (see the module docstring)."""

    transcripts: list[str] = field(default_factory=list)
    engines: list[str] = field(default_factory=list)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    cache: list[str] = field(default_factory=list)
    cache_policy: str = "system_and_3"
    probes: bool = True
    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    run_timeout: float | None = None
    limit: int | None = None
    out: str | None = None
    format: str = "csv"

    def as_dict(self) -> dict[str, Any]:
        """The config as plain data (what ``config.yaml`` holds)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def dump(self) -> str:
        """The config as YAML text."""
        return yaml.safe_dump(self.as_dict(), sort_keys=False, allow_unicode=True)

    def save(self, folder: str | Path) -> Path:
        """Write ``config.yaml`` into ``folder`` (atomically)."""
        path = Path(folder) / "config.yaml"
        tmp = path.with_name(".config.yaml.tmp")
        tmp.write_text(self.dump(), encoding="utf-8")
        tmp.replace(path)
        return path


KEYS = [f.name for f in fields(BenchConfig)]


def load_config(path: str | Path) -> BenchConfig:
    """Read and validate a config file; every mistake is one :class:`ConfigError` line naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    data = read_yaml(path)
    return config_from_mapping(data if data is not None else {}, str(path))


def config_from_mapping(data: Any, where: str = "config") -> BenchConfig:
    """A validated :class:`BenchConfig` from parsed YAML (``where`` names the source in errors)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping of settings, got {type(data).__name__}")
    for key in data:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}{suggest(str(key), KEYS)} (valid: {', '.join(KEYS)})")
    config = BenchConfig()
    config.transcripts = _strings(data.get("transcripts", []), f"{where}: transcripts")
    config.engines, scoped = _engines(data.get("engines", []), f"{where}: engines")
    config.grid = {**_grid(data.get("grid") or {}, f"{where}: grid"), **scoped}
    config.settings = _mapping(data.get("settings") or {}, f"{where}: settings")
    for key in config.settings:
        if key not in _HOST_FIELDS:
            raise ConfigError(f"{where}: settings: unknown host setting {key!r}{suggest(str(key), _HOST_FIELDS)}")
    config.params = _mapping(data.get("params") or {}, f"{where}: params")
    config.cache = _strings(data.get("cache", []), f"{where}: cache")
    config.cache_policy = str(data.get("cache_policy", config.cache_policy))
    probes = data.get("probes", True)
    if not isinstance(probes, bool):
        raise ConfigError(f"{where}: probes must be true or false, got {probes!r}")
    config.probes = probes
    config.workers = _int(data.get("workers", 1), f"{where}: workers", minimum=1)
    config.executor = str(data.get("executor", "local"))
    if config.executor not in ("local", "dask"):
        raise ConfigError(f"{where}: executor must be local or dask, got {config.executor!r}")
    config.scheduler = None if data.get("scheduler") is None else str(data["scheduler"])
    timeout = data.get("run_timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigError(f"{where}: run_timeout must be a positive number of seconds, got {timeout!r}")
    config.run_timeout = None if timeout is None else float(timeout)
    limit = data.get("limit")
    config.limit = None if limit is None else _int(limit, f"{where}: limit", minimum=1)
    config.out = None if data.get("out") is None else str(data["out"])
    config.format = str(data.get("format", "csv"))
    if config.format not in ("csv", "parquet"):
        raise ConfigError(f"{where}: format must be csv or parquet, got {config.format!r}")
    return config


def default_config() -> BenchConfig:
    """What ``contextlab bench`` with no arguments runs: every available engine over the bundled datasets."""
    from contextlab.plugins import list_engines

    engines = [info.name for info in list_engines() if info.available]
    return BenchConfig(
        transcripts=list(DEFAULT_DATASETS),
        engines=engines,
        grid={"context_length": list(DEFAULT_WINDOWS)},
        cache=[DEFAULT_CACHE],
        workers=2,
    )


def timestamped_out(root: str | Path = "runs") -> str:
    """``runs/<UTC timestamp>`` (a new folder per sweep)."""
    return str(Path(root) / _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S"))


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return list(value)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _grid(value: Any, where: str) -> dict[str, list[Any]]:
    grid = _mapping(value, where)
    for key, options in grid.items():
        if not isinstance(options, list) or not options:
            raise ConfigError(f"{where}: {key}: expected a non-empty list of values, got {options!r}")
    return grid


def _int(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


_ENGINE_KEYS = ("name", "grid", "params")


def _engines(value: Any, where: str) -> tuple[list[str], dict[str, list[Any]]]:
    """Engine names, and the scoped grid keys of entries written as ``{name: ..., grid: {...}}``."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of engine names or {{name, grid}} entries, got {value!r}")
    names: list[str] = []
    scoped: dict[str, list[Any]] = {}
    for index, entry in enumerate(value):
        if isinstance(entry, str):
            names.append(entry)
            continue
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise ConfigError(f"{where}[{index}]: expected an engine name or a mapping with 'name', got {entry!r}")
        for key in entry:
            if key not in _ENGINE_KEYS:
                raise ConfigError(
                    f"{where}[{index}]: unknown key {key!r}{suggest(str(key), _ENGINE_KEYS)} "
                    f"(valid: {', '.join(_ENGINE_KEYS)})"
                )
        name = str(entry["name"])
        names.append(name)
        for key, options in _grid(entry.get("grid") or {}, f"{where}[{index}].grid").items():
            scoped[f"{name}.{key}"] = options
        for key, option in _mapping(entry.get("params") or {}, f"{where}[{index}].params").items():
            scoped[f"{name}.{key}"] = [option]
    return names, scoped
