"""Engine discovery: plugin folders, entry points, register(ctx), config.yaml, errors."""

from __future__ import annotations

import importlib
import json
import logging
import sys
from pathlib import Path

import pytest

from contextlab import load_transcript, plugins, replay
from contextlab.engine import ContextEngine
from contextlab.engines import resolve_engine
from contextlab.errors import ConfigError, EngineError
from contextlab.plugins import PluginContext, Registry
from tests.plugin_helpers import HOST_GUIDE_PLUGIN, install_fake_dist, write_plugin

BUNDLED = {"mask_window", "clear_tool_uses", "summary", "hybrid", "lcm", "retrieval"}

SIMPLE_ENGINE = """
from agent.context_engine import ContextEngine

class Engine(ContextEngine):
    def __init__(self, threshold_percent=0.75):
        self.threshold_percent = threshold_percent

    @property
    def name(self):
        return "{name}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(plugins.PLUGIN_PATH_ENV, raising=False)
    monkeypatch.delenv(plugins.LOAD_PLUGINS_ENV, raising=False)


@pytest.fixture(scope="module")
def fake_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_fake_dist(tmp_path_factory.mktemp("fake_dist"))


@pytest.fixture
def with_fake_dist(fake_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(fake_site))
    importlib.invalidate_caches()
    return fake_site


def test_bundled_plugins_are_discovered_with_metadata() -> None:
    infos = Registry().infos()
    assert set(infos) >= BUNDLED
    for name in BUNDLED:
        info = infos[name]
        assert info.source == "bundled"
        assert info.version == "0.1.0"
        assert info.description
        assert Path(info.location, "plugin.yaml").is_file()
    assert infos["passthrough"].source == "builtin"


def test_every_bundled_engine_loads_with_its_own_name() -> None:
    registry = Registry()
    for name in sorted(BUNDLED):
        engine = registry.load(name)
        assert isinstance(engine, ContextEngine)
        assert engine.name == name
        # Each load is a fresh instance (the host's rule), parameters reach the constructor.
        assert registry.load(name) is not engine


def test_parameters_go_to_the_plugin_class() -> None:
    engine = Registry().load("mask_window", {"window_m": 3, "polling": 5})
    assert (engine.window_m, engine.polling) == (3, 5)  # type: ignore[attr-defined]
    with pytest.raises(EngineError, match="bad parameters"):
        Registry().load("mask_window", {"no_such_param": 1})


def test_host_guide_plugin_folder_loads_unchanged(tmp_path: Path) -> None:
    write_plugin(tmp_path, "guide_lcm", HOST_GUIDE_PLUGIN)
    registry = Registry([tmp_path])
    info = registry.infos()["guide_lcm"]
    assert (info.source, info.version) == ("folder", "1.2.3")
    engine = registry.load("guide_lcm")
    assert engine.name == "guide_lcm"
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "x"})) == {"results": []}
    # register(ctx) captured one instance; every load is a clone_for_agent() copy of it.
    assert registry.load("guide_lcm") is not engine


def test_user_folder_from_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_plugin(tmp_path, "env_engine", SIMPLE_ENGINE.format(name="env_engine"))
    monkeypatch.setenv(plugins.PLUGIN_PATH_ENV, str(tmp_path))
    registry = Registry()
    assert registry.infos()["env_engine"].source == "user"
    assert registry.load("env_engine").name == "env_engine"


def test_user_folder_needs_the_engine_api_in_its_init(tmp_path: Path) -> None:
    write_plugin(tmp_path, "not_an_engine", "VALUE = 1\n")
    assert "not_an_engine" not in Registry([tmp_path]).infos()


def test_plugin_with_sibling_modules(tmp_path: Path) -> None:
    init = "from .engine_impl import Engine\n# ContextEngine subclass lives in a sibling module\n"
    write_plugin(tmp_path, "split", init, **{"engine_impl.py": SIMPLE_ENGINE.format(name="split")})
    assert Registry([tmp_path]).load("split").name == "split"


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("name: bad\ndescription: x\n", "field 'version' is missing"),
        ("name: other\ndescription: x\nversion: 1\n", "does not match its folder"),
        ("name: [bad\n", "invalid YAML"),
        ("- a list\n", "expected a mapping"),
        ("name: bad\ndescription: {a: 1}\nversion: 1\n", "must be a string"),
    ],
)
def test_bad_plugin_yaml_is_noted_and_the_folder_name_still_resolves(tmp_path: Path, meta: str, message: str) -> None:
    # The host reads only the description from plugin.yaml and ignores a broken one.
    write_plugin(tmp_path, "bad", SIMPLE_ENGINE.format(name="bad"), meta=meta)
    registry = Registry([tmp_path])
    info = registry.infos()["bad"]
    assert message in (info.note or "")
    assert "plugin.yaml" in (info.note or "")
    assert registry.load("bad").name == "bad"
    assert info.available is True


def test_plugin_yaml_is_optional(tmp_path: Path) -> None:
    folder = tmp_path / "noyaml"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Keeps everything."""\n' + SIMPLE_ENGINE.format(name="noyaml"))
    registry = Registry([tmp_path])
    info = registry.infos()["noyaml"]
    assert info.error is None and info.note is None
    assert registry.load("noyaml").name == "noyaml"
    assert info.description == "Keeps everything."  # the module docstring stands in for plugin.yaml


def test_import_failure_is_reported_and_does_not_stop_others(tmp_path: Path) -> None:
    write_plugin(
        tmp_path,
        "broken",
        "import contextlab_no_such_module\nfrom agent.context_engine import ContextEngine\n",
    )
    write_plugin(tmp_path, "fine", SIMPLE_ENGINE.format(name="fine"))
    registry = Registry([tmp_path])
    listed = {i.name: i for i in registry.list()}
    assert listed["broken"].available is False
    assert "ModuleNotFoundError" in (listed["broken"].error or "")
    assert "contextlab_no_such_module" in (listed["broken"].error or "")
    assert listed["fine"].available is True
    assert all(listed[n].available for n in BUNDLED)
    with pytest.raises(EngineError, match="failed to load"):
        registry.load("broken")


def test_a_user_plugin_shadows_a_bundled_candidate_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The host bundles none of contextlab's candidates: a user's mask_window is the one it would run.
    write_plugin(tmp_path, "mask_window", SIMPLE_ENGINE.format(name="mask_window"))
    write_plugin(tmp_path, "passthrough", SIMPLE_ENGINE.format(name="passthrough"))
    registry = Registry([tmp_path])
    with caplog.at_level(logging.WARNING, logger="contextlab.plugins"):
        infos = registry.infos()
    assert infos["mask_window"].source == "folder"
    assert infos["passthrough"].source == "folder"
    assert {(i.name, i.source) for i in registry.shadowed} == {("mask_window", "bundled"), ("passthrough", "builtin")}
    warnings = [r.getMessage() for r in caplog.records]
    assert len([w for w in warnings if "shadows contextlab's bundled 'mask_window'" in w]) == 1
    assert all("\n" not in w for w in warnings)
    assert type(registry.load("mask_window")).__module__.startswith("contextlab_user_plugins")


def test_nothing_shadows_the_builtin_compressor(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_plugin(tmp_path, "compressor", SIMPLE_ENGINE.format(name="compressor"))
    registry = Registry([tmp_path])
    with caplog.at_level(logging.WARNING, logger="contextlab.plugins"):
        assert registry.infos()["compressor"].source == "builtin"
    assert "the host always runs its built-in 'compressor'" in caplog.text
    assert type(registry.load("compressor")).__module__.startswith("contextlab.engines")


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(EngineError, match=r"did you mean 'mask_window'"):
        Registry().load("mask_windw")
    with pytest.raises(EngineError, match=r"did you mean 'summary'"):
        resolve_engine("sumary")


def test_a_second_register_context_engine_replaces_the_first() -> None:
    # The host's context-engine directory loader keeps the last engine its collector was given.
    ctx = PluginContext("test")
    first, second = resolve_engine("passthrough"), resolve_engine("passthrough")
    ctx.register_context_engine(first)
    ctx.register_context_engine(second)
    assert ctx.engine is second
    assert "replaces the engine registered before it" in ctx.warnings[0]
    with pytest.raises(EngineError):
        ctx.register_context_engine("not an engine")  # type: ignore[arg-type]


def test_a_plugin_registering_twice_resolves_to_its_last_engine(tmp_path: Path) -> None:
    code = SIMPLE_ENGINE.format(name="twice") + (
        "\n\ndef register(ctx):\n    ctx.register_context_engine(Engine(0.1))\n"
        "    ctx.register_context_engine(Engine(0.9))\n"
    )
    write_plugin(tmp_path, "twice", code)
    assert Registry([tmp_path]).load("twice").threshold_percent == 0.9


def test_each_load_of_a_folder_plugin_is_a_fresh_instance(tmp_path: Path) -> None:
    code = SIMPLE_ENGINE.format(name="counted") + (
        "\n\nMADE = []\n\ndef register(ctx):\n    engine = Engine(0.5)\n    MADE.append(engine)\n"
        "    ctx.register_context_engine(engine)\n"
    )
    write_plugin(tmp_path, "counted", code)
    registry = Registry([tmp_path])
    a, b, c = (registry.load("counted") for _ in range(3))
    assert len({id(a), id(b), id(c)}) == 3
    made = sys.modules[type(a).__module__].MADE
    assert [id(e) for e in made] == [id(a), id(b), id(c)]  # register(ctx) ran once per load, as in the host


def test_a_failing_register_falls_back_to_the_engine_class(tmp_path: Path) -> None:
    code = SIMPLE_ENGINE.format(name="fallback") + "\n\ndef register(ctx):\n    raise RuntimeError('no config')\n"
    write_plugin(tmp_path, "fallback", code)
    assert Registry([tmp_path]).load("fallback").name == "fallback"


def test_a_plugin_without_any_engine_is_one_line(tmp_path: Path) -> None:
    write_plugin(tmp_path, "empty", "# ContextEngine\ndef register(ctx):\n    raise RuntimeError('boom')\n")
    registry = Registry([tmp_path])
    with pytest.raises(EngineError, match=r"register\(ctx\) raised RuntimeError: boom") as caught:
        registry.load("empty")
    assert "\n" not in str(caught.value)


def test_register_module_and_register_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_general_plugin.py").write_text(
        SIMPLE_ENGINE.format(name="general") + "\n\ndef register(ctx):\n    ctx.register_context_engine(Engine(0.5))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    assert registry.register_module("my_general_plugin") == "general"
    a, b = registry.load("general"), registry.load("general")
    assert a is not b and a.threshold_percent == 0.5  # clone_for_agent copies of the registered one
    assert registry.infos()["general"].source == "registered"
    cls = type(a)
    assert registry.register_engine(cls, name="general_cls") == "general_cls"
    assert registry.load("general_cls", {"threshold_percent": 0.3}).threshold_percent == 0.3


def test_clone_for_agent_failure_is_an_engine_error() -> None:
    class Uncopyable(type(resolve_engine("passthrough"))):  # type: ignore[misc]
        def clone_for_agent(self) -> ContextEngine:
            raise RuntimeError("holds a socket")

    registry = Registry()
    registry.register_engine(Uncopyable(), name="uncopyable")
    with pytest.raises(EngineError, match="could not be safely copied"):
        registry.load("uncopyable")


def test_entry_point_distribution(with_fake_dist: Path, caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry()
    infos = registry.infos()
    echo = infos["fake_echo"]
    assert echo.source == "entry_point"
    assert echo.version == "0.3.1"
    assert "contextlab-fake-engines" in echo.location
    assert registry.load("fake_echo").name == "fake_echo"
    assert echo.description.startswith("Echo")
    # A module entry point is a general plugin: register(ctx) once, and a second registration is
    # refused as the host's general plugin system refuses it.
    with caplog.at_level(logging.WARNING):
        engine = registry.load("fake_registered")
    assert engine.name == "fake_registered" and engine.label == "first"  # type: ignore[attr-defined]
    assert "already registered" in caplog.text
    listed = {i.name: i for i in registry.list()}
    assert listed["fake_broken"].available is False
    assert "contextlab_fake_missing_dependency" in (listed["fake_broken"].error or "")
    # A distribution claiming a bundled candidate's name shadows it (the host has no such engine).
    assert infos["mask_window"].source == "entry_point"
    assert any(i.source == "bundled" and i.name == "mask_window" for i in registry.shadowed)


def test_load_plugins_env_restricts_third_party(
    with_fake_dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_plugin(tmp_path, "folder_engine", SIMPLE_ENGINE.format(name="folder_engine"))
    monkeypatch.setenv(plugins.LOAD_PLUGINS_ENV, "fake_echo")
    names = set(Registry([tmp_path]).infos())
    assert "fake_echo" in names
    assert "fake_registered" not in names and "folder_engine" not in names
    assert names >= BUNDLED  # bundled engines are always available
    monkeypatch.setenv(plugins.LOAD_PLUGINS_ENV, "")
    assert not {"fake_echo", "folder_engine"} & set(Registry([tmp_path]).infos())


def test_replay_resolves_plugins_by_name(shared_transcripts: Path) -> None:
    path = shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json"
    result = replay(load_transcript(path, 3), "mask_window", context_length=8000)
    assert result.status == "ok"
    assert result.summary["engine"] == "mask_window"
    assert result.summary["select_context_used"] > 0


def test_config_yaml_selects_an_engine(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text('model: x\ncontext:\n  engine: "lcm"\n')
    assert plugins.engine_from_config(config) == "lcm"
    assert plugins.load_config_engine(config).name == "lcm"
    config.write_text("model: x\n")
    assert plugins.engine_from_config(config) == "compressor"  # the host's default; nothing auto-activates


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("context: [a]\n", "'context' must be a mapping"),
        ("context:\n  engine: 3\n", "non-empty string"),
        ("context: {engine: [\n", "invalid YAML"),
        ("- 1\n", "mapping at the top level"),
    ],
)
def test_bad_config_yaml(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        plugins.engine_from_config(config)
    assert str(config) in str(caught.value)
    with pytest.raises(ConfigError, match="cannot read"):
        plugins.engine_from_config(tmp_path / "missing.yaml")


def test_installed_layout_is_found_without_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Simulate a non-editable install: no checkout folder next to the package, plugins shipped as
    # the contextlab_plugins package (see pyproject: the contextlab_plugins -> plugins symlink).
    import shutil

    site = tmp_path / "site"
    shutil.copytree(
        Path(plugins.__file__).resolve().parent.parent / "plugins",
        site / plugins.BUNDLED_PACKAGE,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    monkeypatch.setattr(plugins, "__file__", str(tmp_path / "pkg" / "contextlab" / "plugins.py"))
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m.startswith(plugins.BUNDLED_PACKAGE)]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    assert plugins.bundled_plugin_dir() == site / plugins.BUNDLED_PACKAGE / "context_engine"
    registry = Registry()
    assert {i.name for i in registry.list() if i.source == "bundled" and i.available} >= BUNDLED


def test_retrieval_without_bm25s_is_listed_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # makes ``import bm25s`` raise ImportError
    for name in [m for m in sys.modules if m.startswith(f"{plugins.BUNDLED_PACKAGE}.context_engine.retrieval")]:
        monkeypatch.delitem(sys.modules, name)
    registry = Registry()
    listed = {i.name: i for i in registry.list()}
    assert listed["retrieval"].available is False
    assert "bm25s" in (listed["retrieval"].error or "")
    assert all(listed[n].available for n in BUNDLED - {"retrieval"})
    with pytest.raises(EngineError, match="retrieval"):
        registry.load("retrieval")
