"""The one generic registry (contextlab/registry.py) and the names that resolve through it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from contextlab.errors import ConfigError, EngineError
from contextlab.registry import Registry, suggest, unknown_message


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_lazy_target_is_imported_on_first_lookup_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _module(tmp_path, monkeypatch, "reg_lazy_target", "class Thing:\n    pass\n")
    registry: Registry[type] = Registry("thing")
    registry.register("thing", target="reg_lazy_target:Thing", description="a thing")
    assert "reg_lazy_target" not in sys.modules
    assert "thing" in registry and list(registry) == ["thing"] and registry.describe("thing") == "a thing"
    assert "reg_lazy_target" not in sys.modules  # listing and describing import nothing
    cls = registry.lookup("thing")
    assert cls.__module__ == "reg_lazy_target" and registry["thing"] is cls and registry.entry("thing").loaded


def test_unknown_names_get_one_line_with_the_closest() -> None:
    registry: Registry[int] = Registry("widget", error=EngineError)
    registry.register("alpha", 1)
    registry.register("beta", 2)
    with pytest.raises(EngineError) as caught:
        registry.lookup("alpah")
    assert str(caught.value) == "unknown widget 'alpah'; did you mean 'alpha'? (available: alpha, beta)"
    with pytest.raises(KeyError):
        registry["alpah"]  # the Mapping side keeps Mapping semantics (get() works)
    assert registry.get("alpah") is None and dict(registry) == {"alpha": 1, "beta": 2}
    assert unknown_message("widget", "zzz", ["alpha"]) == "unknown widget 'zzz' (available: alpha)"
    assert suggest("engins", ["engines", "grid"]) == "; did you mean 'engines'?"


def test_a_failing_target_names_itself_and_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry: Registry[Any] = Registry("thing")
    registry.register("late", target="reg_late_module:VALUE")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ConfigError, match=r"^thing 'late' \(reg_late_module:VALUE\) failed to load: ModuleNotFoundError"
    ):
        registry.lookup("late")
    _module(tmp_path, monkeypatch, "reg_late_module", "VALUE = 42\n")
    assert registry.lookup("late") == 42  # the failure was not cached


def test_convert_checks_what_a_target_loads() -> None:
    def only_ints(obj: Any, name: str) -> int:
        if not isinstance(obj, int):
            raise ConfigError(f"{name}: not an int")
        return obj

    registry: Registry[int] = Registry("number", convert=only_ints)
    registry.register("pi", target="math:pi")
    with pytest.raises(ConfigError, match=r"^pi: not an int$"):
        registry.lookup("pi")


def _entry_points(monkeypatch: pytest.MonkeyPatch, group: str, points: dict[str, str]) -> None:
    real = metadata.entry_points

    def fake(**kwargs: Any) -> Any:
        if kwargs.get("group") == group:
            return [metadata.EntryPoint(name, value, group) for name, value in points.items()]
        return real(**kwargs)

    monkeypatch.setattr(metadata, "entry_points", fake)


def test_entry_points_add_names_but_never_replace_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _module(tmp_path, monkeypatch, "reg_ep_module", "A = 'from the entry point'\nB = 'impostor'\n")
    _entry_points(monkeypatch, "contextlab.test_things", {"extra": "reg_ep_module:A", "own": "reg_ep_module:B"})
    registry: Registry[str] = Registry("thing", entry_points="contextlab.test_things")
    registry.register("own", "built in", source="builtin")
    assert registry.lookup("own") == "built in"  # a known name never reads the group
    with caplog.at_level("WARNING", logger="contextlab.registry"):
        assert registry.lookup("extra") == "from the entry point"
    assert registry.lookup("own") == "built in"
    assert "entry point own = reg_ep_module:B (group contextlab.test_things) is ignored" in caplog.text
    assert [(e.name, e.source) for e in registry.entries()] == [("own", "builtin"), ("extra", "entry_point")]


def test_a_cache_provider_from_an_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlab.cache.profiles import PROFILES, make_profile

    _module(
        tmp_path,
        monkeypatch,
        "reg_provider",
        """
        from contextlab.cache.prefix import PrefixProfile

        class AcmeProfile(PrefixProfile):
            provider = "acme"
        """,
    )
    _entry_points(monkeypatch, "contextlab.cache_providers", {"acme": "reg_provider:AcmeProfile"})
    PROFILES.refresh()
    try:
        assert make_profile("acme:m1").label == "acme:m1"
        with pytest.raises(ConfigError, match=r"unknown cache provider 'antropic'; did you mean 'anthropic'\?"):
            make_profile("antropic")
    finally:
        monkeypatch.undo()
        PROFILES.refresh()
    assert "acme" not in PROFILES


def test_every_registry_keeps_its_public_table() -> None:
    from contextlab.cache.policies import POLICIES, Policy
    from contextlab.cache.profiles import PROFILE_CLASSES
    from contextlab.cli import COMMAND_MODULES, COMMANDS
    from contextlab.datasets import DATASETS
    from contextlab.engines import BUILTIN_ENGINES, BUILTINS

    assert list(COMMANDS) == list(COMMAND_MODULES) and COMMANDS["replay"] == COMMAND_MODULES.describe("replay")
    assert (
        BUILTIN_ENGINES["compressor"]
        == "contextlab.engines.compressor:CompressorEngine"
        == BUILTINS.entry("compressor").target
    )
    assert PROFILE_CLASSES["anthropic"] == "contextlab.cache.anthropic:AnthropicProfile"
    assert all(issubclass(POLICIES[name], Policy) for name in POLICIES)
    assert sorted(DATASETS) == ["coding-agent", "coding-agent-short", "support-agent"]


def test_listing_the_builtin_engines_imports_none() -> None:
    code = (
        "import sys, contextlab.engines as e; names = list(e.BUILTINS); "
        "print(names, 'contextlab.engines.compressor' in sys.modules, 'contextlab.plugins' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['passthrough', 'compressor', 'hermes.compressor'] False False"


# --------------------------------------------------------------------------- one engine label

FLAKY_PLUGIN = '''
"""An engine that fails on demand (a ContextEngine for the registry tests)."""
from contextlab.engines.passthrough import PassthroughEngine


class FlakyEngine(PassthroughEngine):
    def __init__(self, fail: str = "never", **kwargs):
        if fail == "start":
            raise RuntimeError("cannot start")
        super().__init__(**kwargs)
        self.fail = fail

    @property
    def name(self):
        return "flaky-reported"

    def update_from_response(self, usage):
        if self.fail == "midway":
            raise RuntimeError("boom midway")
        super().update_from_response(usage)
'''


def test_failed_and_ok_runs_of_one_engine_carry_one_label_through_the_cli(tmp_path: Path) -> None:
    from contextlab.cli import main
    from contextlab.examples import tool_conversation
    from contextlab.transcripts import save_transcript

    plugins = tmp_path / "plugins"
    (plugins / "flaky").mkdir(parents=True)
    (plugins / "flaky" / "__init__.py").write_text(FLAKY_PLUGIN, encoding="utf-8")
    source = tmp_path / "t.jsonl"
    save_transcript(tool_conversation(3, 120, seed=1, name="t0"), source)
    out = tmp_path / "out"
    argv = ["bench", str(source), "--engine", "flaky", "--plugin-path", str(plugins)]
    code = main([*argv, "--grid", "fail=never,start,midway", "--out", str(out), "--no-progress"])
    assert code == 1  # some runs failed; the sweep went on
    summary = pd.read_csv(out / "summary.csv")
    statuses = dict(zip(summary["params"].str.extract(r"fail='(\w+)'")[0], summary["status"], strict=True))
    assert statuses == {"never": "ok", "start": "failed", "midway": "failed"}
    assert summary["engine"].tolist() == ["flaky", "flaky", "flaky"]


def test_a_class_spec_is_labelled_the_same_when_it_fails() -> None:
    from contextlab.bench import bench
    from contextlab.examples import tool_conversation

    namespace: dict[str, Any] = {}
    exec(FLAKY_PLUGIN, namespace)  # the same engine as a class, no plugin folder
    flaky = namespace["FlakyEngine"]
    result = bench(
        [tool_conversation(3, 120, seed=1, name="t0")],
        [flaky],
        {"fail": ["never", "start", "midway"]},
        progress=False,
    )
    assert result.summaries["status"].tolist() == ["ok", "failed", "failed"]
    # before, the run that failed to start was labelled 'FlakyEngine' and the others 'flaky-reported'
    assert result.summaries["engine"].tolist() == ["flaky-reported"] * 3


def test_class_registries_refuse_what_is_not_their_subclass() -> None:
    from contextlab.cache.policies import POLICIES
    from contextlab.cache.profiles import PROFILES

    for registry, kind in ((PROFILES, "cache provider"), (POLICIES, "cache policy")):
        probe = Registry[Any](kind, convert=registry._convert)
        probe.register("wrong", loader=lambda: dict)
        with pytest.raises(ConfigError, match=rf"^{kind} 'wrong': <class 'dict'> is not a \w+ subclass$"):
            probe.lookup("wrong")
