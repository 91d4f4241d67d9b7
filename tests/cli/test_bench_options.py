"""``contextlab bench`` options layer over a sweep file by what was given, not by value."""

from __future__ import annotations

from pathlib import Path

from contextlab.cli import build_parser
from contextlab.cli.bench import build_config


def _config(tmp_path: Path, *options: str, text: str) -> tuple[dict[str, object], dict[str, object]]:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(text, encoding="utf-8")
    argv = ["bench", str(sweep), *options]
    config, _ = build_config(build_parser(argv).parse_args(argv))
    return config.settings, config.params


SWEEP = "transcripts: [coding-agent-short]\nengines: [compressor]\nsettings: {context_length: 64000, seed: 3}\n"


def test_an_option_equal_to_its_default_still_overrides_the_sweep_file(tmp_path: Path) -> None:
    settings, _ = _config(tmp_path, "--context-length", "200000", "--seed", "0", text=SWEEP)
    assert settings == {"context_length": 200_000, "seed": 0}


def test_options_not_given_leave_the_sweep_file_alone(tmp_path: Path) -> None:
    settings, _ = _config(tmp_path, text=SWEEP)
    assert settings == {"context_length": 64_000, "seed": 3}


def test_every_host_option_reaches_the_sweep(tmp_path: Path) -> None:
    # --usage-model and --engine-tools were dropped by bench before (only six options were copied)
    settings, _ = _config(
        tmp_path,
        "--usage-model",
        "rough",
        "--engine-tools",
        "live",
        "--tool-results",
        "recorded",
        "--overhead",
        "0",
        "--encoding",
        "o200k_base",
        text=SWEEP,
    )
    assert settings == {
        "context_length": 64_000,
        "seed": 3,
        "usage_model": "rough",
        "engine_tools": "live",
        "tool_results": "recorded",
        "fixed_overhead_tokens": 0,
        "encoding": "o200k_base",
    }


def test_host_config_under_the_sweep_file_under_the_options(tmp_path: Path) -> None:
    host = tmp_path / "config.yaml"
    host.write_text("model: {default: m-host, context_length: 32000}\ncompression: {threshold: 0.6}\n")
    settings, params = _config(
        tmp_path, "--config", str(host), "--param", "protect_last_n=5", text=SWEEP.replace(", seed: 3", "")
    )
    assert settings == {"model": "m-host", "context_length": 64_000}
    assert params == {"threshold_percent": 0.6, "protect_last_n": 5}
