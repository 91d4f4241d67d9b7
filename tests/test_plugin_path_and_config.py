"""``--plugin-path DIR`` and ``--config config.yaml`` on every engine-resolving command."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextlab import plugins
from contextlab.cli import main
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.hostconfig import load_host_config
from tests.plugin_helpers import HOST_GUIDE_PLUGIN, write_plugin

SHORT = "datasets/coding-agent-short.jsonl.gz"


@pytest.fixture(autouse=True)
def _restore_registry() -> Iterator[None]:
    registry = plugins.default_registry()
    saved = list(registry._extra_paths)
    yield
    registry._extra_paths[:] = saved
    registry.refresh()


@pytest.fixture
def hermes_home(tmp_path: Path) -> Path:
    """A ``$HERMES_HOME``-like tree: ``plugins/guide_lcm/`` (the host's user plugin layout)."""
    write_plugin(tmp_path / "home" / "plugins", "guide_lcm", HOST_GUIDE_PLUGIN)
    return tmp_path / "home"


def _json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("layout", ["plugins", "plugins/context_engine"])
def test_replay_takes_a_plugins_or_a_context_engine_folder(
    tmp_path: Path, layout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "plugins" / "context_engine"
    write_plugin(root, "guide_lcm", HOST_GUIDE_PLUGIN)
    code = main(["replay", SHORT, "--engine", "guide_lcm", "--plugin-path", str(tmp_path / layout), "--json"])
    assert code == 0
    summary = _json(capsys)
    assert isinstance(summary, dict) and summary["engine"] == "guide_lcm" and summary["requests"] == 21


def test_the_hosts_user_plugins_folder_works_too(hermes_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines", "--plugin-path", str(hermes_home / "plugins"), "--json"]) == 0
    rows = {r["name"]: r for r in _json(capsys)}  # type: ignore[union-attr]
    assert rows["guide_lcm"]["source"] == "folder" and rows["guide_lcm"]["available"] is True


def test_hermes_home_is_discovered(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    registry = plugins.Registry()
    assert registry.infos()["guide_lcm"].source == "user"


def test_a_folder_without_plugins_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty" / "notes").mkdir(parents=True)
    code = main(["replay", SHORT, "--engine", "passthrough", "--plugin-path", str(tmp_path / "empty")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("contextlab: error: plugin folder") and "holds no context engine plugin" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_config_selects_the_engine_and_the_host_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "model:\n  default: anthropic/claude-sonnet-4\n  context_length: 16000\n"
        "context:\n  engine: compressor\n"
        "compression:\n  enabled: true\n  threshold: 0.6\n  protect_last_n: 12\n  target_ratio: 0.3\n"
        "  hygiene_hard_message_limit: 5000\n"  # a key the replay does not model: ignored
    )
    assert main(["replay", SHORT, "--config", str(config), "--json"]) == 0
    summary = _json(capsys)
    assert isinstance(summary, dict)
    assert summary["engine"] == "compressor" and summary["context_length"] == 16000
    assert "protect_last_n=12" in summary["params"] and "summary_target_ratio=0.3" in summary["params"]
    # The command line wins over the file.
    assert (
        main(
            [
                "replay",
                SHORT,
                "--config",
                str(config),
                "--context-length",
                "20000",
                "--param",
                "protect_last_n=8",
                "--json",
            ]
        )
        == 0
    )
    summary = _json(capsys)
    assert isinstance(summary, dict) and summary["context_length"] == 20000 and "protect_last_n=8" in summary["params"]


def test_compression_keys_never_reach_a_plugin_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("context:\n  engine: mask_window\ncompression:\n  threshold: 0.6\n  protect_last_n: 12\n")
    assert main(["replay", SHORT, "--config", str(config), "--context-length", "16000", "--json"]) == 0
    summary = _json(capsys)
    assert isinstance(summary, dict) and summary["engine"] == "mask_window"
    assert "protect_last_n" not in summary["params"]


def test_compression_enabled_false_turns_every_gate_off(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("compression:\n  enabled: false\n")
    assert load_host_config(config).apply(HostSettings()).compression_enabled is False


def test_the_tool_loop_guardrails_follow_the_hosts_keys(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("tool_loop_guardrails:\n  warnings_enabled: false\nagent:\n  stall_guards: false\n")
    settings = load_host_config(config).apply(HostSettings())
    assert (settings.tool_loop_warnings, settings.stall_guards) == (False, False)
    assert (HostSettings().tool_loop_warnings, HostSettings().stall_guards) == (True, True)


def test_bench_and_check_and_engines_take_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_plugin(tmp_path / "plugins", "guide_lcm", HOST_GUIDE_PLUGIN)
    config = tmp_path / "config.yaml"
    config.write_text("context:\n  engine: guide_lcm\nmodel:\n  context_length: 16000\n")
    common = ["--plugin-path", str(tmp_path / "plugins"), "--config", str(config)]
    assert main(["bench", SHORT, "--no-progress", *common]) == 0
    assert "guide_lcm" in capsys.readouterr().out
    assert main(["engines", *common]) == 0
    assert f"* selected by {config}: guide_lcm" in capsys.readouterr().out
    main(["check", *common, "--json", "--threads", "1"])
    report = _json(capsys)
    assert isinstance(report, dict) and report["engine"] == "guide_lcm"
    # The guide's engine never compacts (its compress is a no-op): only that rule may fail.
    assert {f["rule"] for f in report["failures"]} <= {"compacts_under_threshold"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("compression:\n  threshold: high\n", "compression.threshold must be a number, got 'high'"),
        ("compression:\n  threshold: 7\n", "compression.threshold must be a fraction in (0, 1]"),
        ("compression:\n  enabled: 'no'\n", "compression.enabled must be a boolean"),
        ("model:\n  context_length: 12.5\n", "model.context_length must be a number"),
        ("model:\n  base_url: 8080\n", "model.base_url must be a string, got int"),
        ("model:\n  provider: [deepseek]\n", "model.provider must be a string, got list"),
        ("compression: [1, 2]\n", "'compression' must be a mapping"),
        ("context:\n  engine: 5\n", "context.engine must be a non-empty string"),
        ("context: {engine: [\n", "invalid YAML"),
        ("agent:\n  stall_guards: sometimes\n", "agent.stall_guards must be a boolean"),
        ("tool_loop_guardrails: true\n", "'tool_loop_guardrails' must be a mapping"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_host_config(config)
    assert message in str(caught.value) and str(config) in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_route_in_the_config_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  provider: deepseek\n  base_url: [https://api.deepseek.com]\n")
    out = tmp_path / "trace.parquet"
    assert main(["replay", "datasets/coding-agent-short.jsonl.gz", "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.base_url must be a string, got list" in err and str(config) in err
    assert "\n" not in err and "Traceback" not in err
    assert not out.exists()


def test_an_empty_engine_is_the_compressor_as_in_the_host(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("context:\n  engine: ''\n")
    assert load_host_config(config).engine == "compressor"


def test_check_needs_an_engine_or_a_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert "name an engine" in capsys.readouterr().err


def test_bench_config_compression_keys_reach_only_the_compressor_among_mixed_engines(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("compression:\n  protect_last_n: 12\n")
    out = tmp_path / "out"
    args = [
        "bench",
        SHORT,
        "--engine",
        "compressor",
        "--engine",
        "passthrough",
        "--config",
        str(config),
        "--context-length",
        "16000",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    with (out / "summary.csv").open() as handle:
        params = {row["engine"]: row["params"] for row in csv.DictReader(handle)}
    assert "protect_last_n=12" in params["compressor"]  # before: dropped for every engine
    assert "protect_last_n" not in params["passthrough"]
