"""Sweep config files: the README's example is valid, keys map onto ``bench()``, the default sweep is complete."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

from contextlab.bench import bench
from contextlab.bench.config import KEYS, config_from_mapping, default_config
from contextlab.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent


def test_the_readme_config_is_valid() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert blocks, "the README shows no sweep config"
    config = config_from_mapping(yaml.safe_load(blocks[0]), "README")
    assert config.engines == ["passthrough", "compressor"]
    assert config.grid == {"context_length": [64000, 128000], "compressor.tail_mode": ["lean", "legacy"]}
    assert config.run_timeout == 600.0 and config.format == "parquet"


def test_config_keys_are_bench_arguments() -> None:
    arguments = set(inspect.signature(bench).parameters)
    # cache + cache_policy become observers, limit trims transcripts, format picks the file type
    assert set(KEYS) - arguments == {"cache", "cache_policy", "limit", "format"}


def test_default_sweep_runs_every_available_engine_over_the_bundled_datasets() -> None:
    from contextlab.plugins import list_engines

    config = default_config()
    assert config.transcripts == ["coding-agent-short", "support-agent", "coding-agent"]
    assert config.engines == [i.name for i in list_engines() if i.available] and "compressor" in config.engines
    assert config.grid == {"context_length": [64000, 128000]} and config.cache


def test_bad_values_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"x\.yaml: run_timeout must be a positive number"):
        config_from_mapping({"run_timeout": -1}, "x.yaml")
    with pytest.raises(ConfigError, match=r"x\.yaml: grid: context_length: expected a non-empty list"):
        config_from_mapping({"grid": {"context_length": 4000}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"x\.yaml: probes must be true or false, got 'no'"):
        config_from_mapping({"probes": "no"}, "x.yaml")
    assert config_from_mapping({"probes": False}, "x.yaml").probes is False
    with pytest.raises(ConfigError, match=r"executor must be local or dask"):
        config_from_mapping({"executor": "ray"}, "x.yaml")
