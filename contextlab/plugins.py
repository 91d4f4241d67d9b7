"""Engine discovery: every way the Hermes host finds a context engine, plus Python entry points.

Sources (``docs/engine-authors.md`` says which host rule each follows):

1. ``builtin``: ``compressor`` (the host's own engine: nothing shadows it) and ``passthrough``;
2. ``bundled``: ``plugins/context_engine/<name>/`` shipped with contextlab (the repo's top-level
   ``plugins/`` folder in a source checkout, the ``contextlab_plugins`` package in an installed wheel);
3. ``folder``: folders passed in (:func:`add_plugin_path`, ``--plugin-path``), then ``user``: folders in
   ``$CONTEXTLAB_PLUGIN_PATH`` (``os.pathsep``-separated) and the host's ``$HERMES_HOME/plugins``;
4. ``entry_point``: the ``contextlab.engines`` entry-point group (a class, an instance, a factory or a
   module with ``register(ctx)``);
5. ``registered``: :func:`register_plugin_module` (a module whose ``register(ctx)`` calls
   ``ctx.register_context_engine``) and :func:`register_engine`.

The host bundles none of contextlab's candidate engines, so a third-party plugin with the name of a
bundled one (or of ``passthrough``) shadows it, with a one-line warning; among third-party sources
the first in the order above wins. A plugin folder is ``<name>/__init__.py``; the folder name is the
engine name and an optional ``plugin.yaml`` adds the description and version. Discovery reads
metadata only; a plugin is imported when it is loaded or listed with :func:`list_engines`. Every load
of a folder plugin runs its ``register(ctx)`` (or constructs its class) again, so each run gets a
fresh instance, as the host's directory loader does. An import failure marks that plugin
unavailable with its reason and never stops the others. ``$CONTEXTLAB_LOAD_PLUGINS``
(comma-separated names; empty means none) restricts which *third-party* plugins (folder,
user, entry point) are considered; bundled ones always are.
Plugins are never auto-activated: :func:`engine_from_config` reads ``context: engine:`` from a
``config.yaml``, as the host does.

Discovery leaves one winner per name in a generic :class:`contextlab.registry.Registry` of engine
factories (:meth:`EngineRegistry.table`); :func:`resolve_engine` resolves every engine name there,
built-ins included (``docs/architecture.md``, "One registry").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import logging
import os
import sys
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from contextlab.bundled import PLUGINS_PACKAGE, package_folder
from contextlab.compat import engine_bases
from contextlab.engine import ContextEngine, clone_engine, is_engine, is_engine_class
from contextlab.engines import BUILTINS, EngineSpec, builtin_engine_class, engine_label
from contextlab.errors import ConfigError, EngineError
from contextlab.registry import Registry as NameRegistry
from contextlab.yaml_file import read_yaml

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "contextlab.engines"
PLUGIN_PATH_ENV = "CONTEXTLAB_PLUGIN_PATH"
HERMES_HOME_ENV = "HERMES_HOME"
"""The host's home: its user plugins live in ``$HERMES_HOME/plugins/<name>/``."""
UNSHADOWABLE = frozenset({"compressor"})
"""Names no plugin can take: the host always runs its built-in compressor for ``context.engine: compressor``."""
LOAD_PLUGINS_ENV = "CONTEXTLAB_LOAD_PLUGINS"
QUALIFY_BYTES = 8192
"""The host only considers a user folder whose ``__init__.py`` mentions the engine API in its first 8 KB."""
QUALIFY_WORDS = ("register_context_engine", "ContextEngine")
BUNDLED_PACKAGE = PLUGINS_PACKAGE
"""Import name of the bundled plugins in an installed wheel (``plugins/`` mapped by setuptools)."""
SOURCES = ("builtin", "bundled", "folder", "user", "entry_point", "registered")

Factory = Callable[[Mapping[str, Any]], ContextEngine]


@dataclass
class PluginInfo:
    """One discovered engine.

    Attributes:
        name: The engine name (``plugin.yaml`` ``name``, the entry-point name, or ``engine.name``).
        source: ``builtin``, ``bundled``, ``folder``, ``user``, ``entry_point`` or ``registered``.
        location: Folder, ``module:attr`` or distribution it came from.
        description: One line from the metadata (or the class docstring).
        version: Plugin or distribution version ("" when unknown).
        available: False once loading it failed (see ``error``); None until it was tried.
        error: Why it is unavailable (import error, no engine found).
        note: A non-fatal remark (an unreadable ``plugin.yaml``, what this plugin shadows).
    """

    name: str
    source: str
    location: str
    description: str = ""
    version: str = ""
    available: bool | None = None
    error: str | None = None
    note: str | None = None
    _loader: Callable[[], Factory] | None = field(default=None, repr=False, compare=False)
    _factory: Factory | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The public fields, JSON-ready."""
        return {
            "name": self.name,
            "source": self.source,
            "location": self.location,
            "description": self.description,
            "version": self.version,
            "available": self.available,
            "error": self.error,
            "note": self.note,
        }


# --------------------------------------------------------------------------- register(ctx)


class PluginContext:
    """The ``ctx`` a module's ``register(ctx)`` receives (the host's plugin context, engine part).

    A second ``register_context_engine`` replaces the first, as the host's context-engine directory
    loader does (its collector keeps the last engine); with ``first_wins`` (the host's general plugin
    system, used for modules and entry points) it is refused with a warning instead.
    ``register_command`` is accepted and recorded (contextlab has no slash commands).
    """

    def __init__(self, label: str, *, first_wins: bool = False) -> None:
        self.label = label
        self.first_wins = first_wins
        self.engine: ContextEngine | None = None
        self.commands: dict[str, Any] = {}
        self.warnings: list[str] = []

    def register_context_engine(self, engine: ContextEngine) -> None:
        if not is_engine(engine):
            raise EngineError(
                f"{self.label}: register_context_engine expects a ContextEngine, got {type(engine).__name__}"
            )
        if self.engine is not None and self.first_wins:
            message = (
                f"{self.label}: a context engine ({engine_label(self.engine)!r}) is already registered; "
                f"ignoring {engine_label(engine)!r}"
            )
            log.warning(message)
            self.warnings.append(message)
            return
        if self.engine is not None:
            # Not a warning: the host replaces silently; the note says which one won.
            self.warnings.append(
                f"{self.label}: {engine_label(engine)!r} replaces the engine registered before it "
                f"({engine_label(self.engine)!r})"
            )
        self.engine = engine

    def register_command(self, name: str, handler: Any, *args: Any, **kwargs: Any) -> None:
        self.commands[name] = handler

    def __getattr__(self, name: str) -> Any:
        # General plugins may call other registration hooks the host offers (tools, memory...):
        # contextlab hosts only engines, so those calls are accepted and ignored.
        if name.startswith("register_"):
            return lambda *a, **k: None
        raise AttributeError(name)


def factory_from_object(obj: Any, label: str) -> Factory:
    """A factory of fresh engines from a class, an instance, a module with ``register(ctx)`` or a callable.

    Instances (also those captured through ``register(ctx)``) are copied with ``clone_for_agent()`` for
    every run; parameters then construct a new instance of the engine's class instead.
    """
    if isinstance(obj, types.ModuleType):
        return _factory_from_module(obj, label, per_load=False)
    if is_engine_class(obj):
        return _class_factory(obj, label)
    if is_engine(obj):
        return _instance_factory(obj, label)
    if callable(obj):
        made = obj()
        if is_engine(made) or is_engine_class(made):
            return factory_from_object(made, label)
        raise EngineError(f"{label}: factory returned {type(made).__name__}, not a ContextEngine")
    raise EngineError(f"{label}: {type(obj).__name__} is not an engine class, instance, factory or module")


def _class_factory(cls: type[ContextEngine], label: str) -> Factory:
    def make(params: Mapping[str, Any]) -> ContextEngine:
        try:
            return cls(**dict(params))
        except TypeError as error:
            raise EngineError(f"engine {label!r}: bad parameters {sorted(params)}: {error}") from error
        except Exception as error:
            raise EngineError(f"engine {label!r} failed to start: {type(error).__name__}: {error}") from error

    return make


def _instance_factory(engine: ContextEngine, label: str) -> Factory:
    def make(params: Mapping[str, Any]) -> ContextEngine:
        if params:
            return _class_factory(type(engine), label)(params)
        try:
            cloned: ContextEngine = clone_engine(engine)
        except Exception as error:
            # The host logs and falls back to the compressor; contextlab reports it instead.
            raise EngineError(
                f"context engine {label!r} could not be safely copied for this agent "
                f"(clone_for_agent raised {type(error).__name__}: {error})"
            ) from None
        return cloned

    return make


def _factory_from_module(module: types.ModuleType, label: str, *, per_load: bool = True) -> Factory:
    """The engine factory of a plugin module, found as the host finds it.

    ``register(ctx)`` first (the last engine it registers wins); when the module has none, or it
    raises or registers nothing, the first engine class in ``dir(module)`` order that constructs
    without arguments. With ``per_load`` (folder plugins, the host's directory loader) every call
    runs that discovery again, so each load is a fresh instance; otherwise (a general plugin
    module) the engine found once is copied with ``clone_for_agent()`` per load.

    Raises:
        EngineError: No engine found (the reason ``register`` failed is named).
    """
    first, how = _discover_in_module(module, label, first_wins=not per_load)
    if not per_load:
        return _instance_factory(first, label)
    spare = [first]  # the probe instance serves the first load, so a plugin is constructed once per load
    lock = threading.Lock()

    def make(params: Mapping[str, Any]) -> ContextEngine:
        if params:
            return _class_factory(type(first), label)(params)
        with lock:
            if spare:
                return spare.pop()
        try:
            engine, _ = _discover_in_module(module, label) if how == "register" else (type(first)(), how)
        except EngineError:
            raise
        except Exception as error:
            raise EngineError(f"engine {label!r} failed to start: {type(error).__name__}: {error}") from None
        return engine

    return make


def _discover_in_module(module: types.ModuleType, label: str, *, first_wins: bool = False) -> tuple[ContextEngine, str]:
    """One engine instance from ``module`` and how it was found (``"register"`` or ``"class"``)."""
    problem = ""
    register = getattr(module, "register", None)
    if callable(register):
        ctx = PluginContext(label, first_wins=first_wins)
        try:
            register(ctx)
        except Exception as error:
            problem = f"register(ctx) raised {type(error).__name__}: {error}"
        else:
            if ctx.engine is not None:
                return ctx.engine, "register"
            problem = "register(ctx) did not call ctx.register_context_engine"
    bases = engine_bases()
    for attr in sorted(dir(module)):
        obj = getattr(module, attr, None)
        if not isinstance(obj, type) or not is_engine_class(obj) or obj in bases:
            continue
        if getattr(obj, "__abstractmethods__", None):
            continue
        try:
            return obj(), "class"
        except Exception as error:  # the host skips a class that cannot be constructed without arguments
            problem = problem or f"{obj.__qualname__}() raised {type(error).__name__}: {error}"
    raise EngineError(f"{label}: {problem or f'no register(ctx) and no ContextEngine subclass in {module.__name__}'}")


# --------------------------------------------------------------------------- plugin folders


def bundled_plugin_dir() -> Path | None:
    """The bundled ``context_engine`` folder, found through the ``contextlab_plugins`` package (the
    checkout's ``plugins/`` in an editable install, site-packages otherwise)."""
    return package_folder(BUNDLED_PACKAGE, "context_engine")


def read_plugin_yaml(folder: Path) -> dict[str, str]:
    """Validated ``plugin.yaml`` of a plugin folder: ``name``, ``description``, ``version`` as strings.

    Raises:
        EngineError: Missing file, bad YAML, not a mapping, or a missing/empty/non-string field.
    """
    path = folder / "plugin.yaml"
    if not path.is_file():
        raise EngineError(f"{path}: missing plugin.yaml (expected name, description, version)")
    data = read_yaml(path, error=EngineError)
    if not isinstance(data, dict):
        raise EngineError(f"{path}: expected a mapping with name, description, version; got {type(data).__name__}")
    out: dict[str, str] = {}
    for key in ("name", "description", "version"):
        value = data.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise EngineError(f"{path}: field {key!r} is missing or empty")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise EngineError(f"{path}: field {key!r} must be a string, got {type(value).__name__}")
        out[key] = str(value).strip()
    if out["name"] != folder.name:
        raise EngineError(f"{path}: name {out['name']!r} does not match its folder {folder.name!r}")
    return out


def plugin_metadata(folder: Path) -> tuple[str, str, str | None]:
    """``(description, version, problem)`` from an optional ``plugin.yaml``.

    The host resolves an engine by its folder name and reads only ``description`` from this file,
    ignoring a missing or unreadable one; contextlab does the same, and names the problem.
    """
    if not (folder / "plugin.yaml").is_file():
        return "", "", None
    try:
        meta = read_plugin_yaml(folder)
    except EngineError as error:
        return "", "", str(error)
    return meta["description"], meta["version"], None


def _qualifies(init: Path) -> bool:
    try:
        head = init.read_bytes()[:QUALIFY_BYTES].decode("utf-8", "replace")
    except OSError:
        return False
    return any(word in head for word in QUALIFY_WORDS)


def plugin_roots(path: Path) -> list[Path]:
    """The folders of ``<name>/`` plugins that ``path`` stands for.

    ``path`` may be a folder of plugin folders (a ``context_engine/`` folder, or the host's
    ``$HERMES_HOME/plugins``) or a ``plugins/`` folder holding ``context_engine/``: then both.
    """
    roots = [path]
    nested = path / "context_engine"
    if nested.is_dir():
        roots.append(nested)
    return roots


def _folder_infos(root: Path, source: str) -> list[PluginInfo]:
    infos: list[PluginInfo] = []
    if not root.is_dir():
        log.warning("plugin folder %s does not exist", root)
        return infos
    if source != "bundled":
        return [info for sub in plugin_roots(root) for info in _plugin_folders(sub, source)]
    return _plugin_folders(root, source)


def _plugin_folders(root: Path, source: str) -> list[PluginInfo]:
    infos: list[PluginInfo] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        init = folder / "__init__.py"
        if not init.is_file():
            continue
        if source != "bundled" and not _qualifies(init):
            continue
        info = PluginInfo(name=folder.name, source=source, location=str(folder))
        info.description, info.version, problem = plugin_metadata(folder)
        if problem:
            info.note = f"{problem} (ignored: the folder name names the engine)"
        info._loader = _folder_loader(folder, source, info)
        infos.append(info)
    return infos


def _module_name(folder: Path, source: str) -> str:
    if source == "bundled":
        return f"{BUNDLED_PACKAGE}.context_engine.{folder.name}"
    # A synthetic namespace per folder, so two user folders can hold plugins of the same name.
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:10]
    return f"contextlab_user_plugins.p{digest}.{folder.name}"


def _folder_loader(folder: Path, source: str, info: PluginInfo) -> Callable[[], Factory]:
    def load() -> Factory:
        module = import_plugin_folder(folder, _module_name(folder, source))
        factory = _factory_from_module(module, folder.name)
        if not info.description:
            info.description = _first_doc_line(module)
        return factory

    return load


def _first_doc_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


_import_lock = threading.RLock()


def import_plugin_folder(folder: Path, module_name: str) -> types.ModuleType:
    """Import ``folder/__init__.py`` as package ``module_name`` (sibling modules import relatively)."""
    with _import_lock:
        existing = sys.modules.get(module_name)
        if existing is not None and Path(getattr(existing, "__file__", "")).parent == folder:
            return existing
        _ensure_parents(module_name, folder)
        spec = importlib.util.spec_from_file_location(
            module_name, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        if spec is None or spec.loader is None:
            raise EngineError(f"{folder}: cannot import __init__.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        return module


def _ensure_parents(module_name: str, folder: Path) -> None:
    parts = module_name.split(".")[:-1]
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name in sys.modules:
            continue
        if name == BUNDLED_PACKAGE and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
            continue
        parent = types.ModuleType(name)
        parent.__path__ = [str(folder.parent)] if i == len(parts) else []
        sys.modules[name] = parent


# --------------------------------------------------------------------------- entry points


def _entry_point_infos() -> list[PluginInfo]:
    infos: list[PluginInfo] = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        dist = getattr(ep, "dist", None)
        info = PluginInfo(
            name=ep.name,
            source="entry_point",
            location=f"{ep.value} ({dist.name})" if dist is not None else ep.value,
            version=str(dist.version) if dist is not None else "",
        )
        info._loader = _entry_point_loader(ep, info)
        infos.append(info)
    return infos


def _entry_point_loader(ep: metadata.EntryPoint, info: PluginInfo) -> Callable[[], Factory]:
    def load() -> Factory:
        obj = ep.load()
        if not info.description:
            doc = (getattr(obj, "__doc__", None) or "").strip()
            info.description = doc.splitlines()[0] if doc else ""
        return factory_from_object(obj, ep.name)

    return load


# --------------------------------------------------------------------------- the registry


class EngineRegistry:
    """All discovered engines for a set of plugin folders; loads each plugin at most once.

    Discovery applies the host's precedence rules (module docstring) to every source, built-ins
    included, and leaves one winner per name in a generic :class:`contextlab.registry.Registry`:
    every engine name, built-in or plugin, resolves through that one table.
    """

    def __init__(self, paths: Iterable[str | Path] = ()) -> None:
        self._lock = threading.RLock()
        self._extra_paths = [Path(p) for p in paths]
        self._registered: list[PluginInfo] = []
        self._infos: dict[str, PluginInfo] | None = None
        self._table: NameRegistry[Factory] | None = None
        self.shadowed: list[PluginInfo] = []
        self._warned: set[str] = set()

    # -- configuration

    def add_path(self, path: str | Path) -> None:
        """Also discover plugins in ``path`` (a folder of ``<name>/`` plugin folders)."""
        with self._lock:
            folder = Path(path)
            if not folder.is_dir():
                raise ConfigError(f"plugin folder {folder} does not exist")
            if not _folder_infos(folder, "folder"):
                raise ConfigError(
                    f"plugin folder {folder} holds no context engine plugin "
                    "(expected <name>/__init__.py mentioning ContextEngine or register_context_engine, "
                    "here or in its context_engine/ folder)"
                )
            if folder not in self._extra_paths:
                self._extra_paths.append(folder)
            self._infos = self._table = None

    def register_module(self, module: str | types.ModuleType) -> str:
        """Load an engine through a module's ``register(ctx)``; returns its name."""
        mod = importlib.import_module(module) if isinstance(module, str) else module
        factory = _factory_from_module(mod, mod.__name__, per_load=False)
        name = engine_label(factory({}))
        return self._add_registered(name, mod.__name__, factory, mod.__doc__)

    def register_engine(self, engine: type[ContextEngine] | ContextEngine, name: str | None = None) -> str:
        """Make a class or instance resolvable by name (the notebook prototyping path)."""
        label = name or str(getattr(engine, "__name__", type(engine).__name__))
        factory = factory_from_object(engine, label)
        resolved = name or engine_label(factory({}))
        return self._add_registered(resolved, f"{type(engine).__module__}", factory, engine.__doc__)

    def _add_registered(self, name: str, location: str, factory: Factory, doc: str | None) -> str:
        first = (doc or "").strip().splitlines()
        info = PluginInfo(name, "registered", location, description=first[0] if first else "", available=True)
        info._factory = factory
        with self._lock:
            self._registered = [i for i in self._registered if i.name != name] + [info]
            self._infos = self._table = None
        return name

    def refresh(self) -> None:
        """Forget discovery results (a new folder, an installed distribution, a changed env var)."""
        with self._lock:
            self._infos = self._table = None

    # -- discovery

    def infos(self) -> dict[str, PluginInfo]:
        """Name → info for every discovered engine (metadata only, nothing imported)."""
        with self._lock:
            if self._infos is None:
                self._infos = self._discover()
            return self._infos

    def table(self) -> NameRegistry[Factory]:
        """The winners of discovery as one generic registry of engine factories (name → factory)."""
        with self._lock:
            infos = self.infos()
            if self._table is None:
                table: NameRegistry[Factory] = NameRegistry("engine", error=EngineError, cache=False)
                for name in sorted(infos):
                    info = infos[name]
                    table.register(
                        name,
                        loader=functools.partial(self._load, info),
                        description=info.description,
                        source=info.source,
                    )
                self._table = table
            return self._table

    def _discover(self) -> dict[str, PluginInfo]:
        candidates = [_builtin_info(entry.name, entry.target, entry.description) for entry in BUILTINS.entries()]
        candidates.sort(key=lambda info: info.name)
        bundled = bundled_plugin_dir()
        if bundled is not None:
            candidates += _folder_infos(bundled, "bundled")
        allowed = _allowed_third_party()
        third: list[PluginInfo] = []
        for path in self._extra_paths:
            third += _folder_infos(path, "folder")
        for path in _env_paths():
            third += _folder_infos(path, "user")
        try:
            third += _entry_point_infos()
        except Exception as error:  # a broken distribution must not hide every other engine
            log.warning("reading %s entry points failed: %s", ENTRY_POINT_GROUP, error)
        candidates += [i for i in third if allowed is None or i.name in allowed]
        candidates += self._registered
        found: dict[str, PluginInfo] = {}
        self.shadowed = []
        for info in candidates:
            held = found.get(info.name)
            if held is None:
                found[info.name] = info
            elif info.name in UNSHADOWABLE:
                self._shadow(
                    info,
                    f"{info.source} plugin {info.name!r} ({info.location}) is ignored: "
                    f"the host always runs its built-in {info.name!r}",
                )
            elif info.source == "registered" or held.source in ("builtin", "bundled"):
                # The host bundles none of contextlab's candidates: a third-party plugin of that name wins.
                self._shadow(
                    held,
                    f"{info.source} plugin {info.name!r} ({info.location}) shadows "
                    f"contextlab's {held.source} {info.name!r}",
                )
                info.note = f"shadows contextlab's {held.source} {info.name!r}"
                found[info.name] = info
            else:
                self._shadow(
                    info,
                    f"{info.source} plugin {info.name!r} ({info.location}) is shadowed by the "
                    f"{held.source} one ({held.location})",
                )
        return found

    def _shadow(self, info: PluginInfo, message: str) -> None:
        self.shadowed.append(info)
        if info.source != "registered" and message not in self._warned:
            self._warned.add(message)  # once per process and message, not on every re-discovery
            log.warning(message)

    def names(self) -> list[str]:
        return sorted(self.infos())

    # -- loading

    def factory(self, name: str) -> Factory:
        """The engine factory for ``name`` (imports the plugin once).

        Raises:
            EngineError: Unknown name (with "did you mean"), or the plugin fails to load.
        """
        return self.table().lookup(name)

    def _load(self, info: PluginInfo) -> Factory:
        """Load one discovered engine (any source, built-ins included), recording whether it is available."""
        name = info.name
        with self._lock:
            if info._factory is not None:
                return info._factory
            if info._loader is None:
                raise EngineError(f"engine {name!r} ({info.location}) is unavailable: {info.error}")
            try:
                info._factory = info._loader()
            except EngineError as error:
                info.available, info.error = False, str(error)
                raise
            except Exception as error:
                info.available, info.error = False, f"{type(error).__name__}: {error}"
                raise EngineError(f"engine {name!r} ({info.location}) failed to load: {info.error}") from error
            info.available, info.error = True, None
            return info._factory

    def load(self, name: str, params: Mapping[str, Any] | None = None) -> ContextEngine:
        """A fresh engine instance named ``name`` (``params`` go to its constructor)."""
        engine = self.factory(name)(dict(params or {}))
        actual = engine_label(engine)
        if actual != name:
            log.warning("engine loaded as %r reports name %r", name, actual)
        return engine

    def list(self) -> list[PluginInfo]:
        """Every discovered engine, loaded once to learn whether it is available (failures reported)."""
        infos = self.infos()
        for name in sorted(infos):
            with contextlib.suppress(EngineError):
                self.factory(name)
        return [infos[n] for n in sorted(infos)]


def _builtin_info(name: str, target: str, description: str) -> PluginInfo:
    """A built-in engine as a discovered plugin: loaded through the same path as every other source."""
    info = PluginInfo(name, "builtin", target, description=description or _builtin_description(name))
    info.version = _own_version()
    info._loader = lambda: _class_factory(builtin_engine_class(name), name)
    return info


def _builtin_description(name: str) -> str:
    try:
        doc = (builtin_engine_class(name).__doc__ or "").strip()
    except Exception as error:
        return f"(failed to import: {error})"
    return doc.splitlines()[0] if doc else ""


def _own_version() -> str:
    try:
        return metadata.version("contextlab")
    except metadata.PackageNotFoundError:
        return ""


def _env_paths() -> list[Path]:
    raw = os.environ.get(PLUGIN_PATH_ENV, "")
    paths = [Path(p) for p in raw.split(os.pathsep) if p.strip()]
    home = os.environ.get(HERMES_HOME_ENV, "").strip()
    if home and (Path(home) / "plugins").is_dir():
        paths.append(Path(home) / "plugins")
    return paths


def _allowed_third_party() -> set[str] | None:
    raw = os.environ.get(LOAD_PLUGINS_ENV)
    if raw is None:
        return None
    return {n.strip() for n in raw.split(",") if n.strip()}


# --------------------------------------------------------------------------- module-level API

Registry = EngineRegistry
"""The older name of :class:`EngineRegistry` (kept: scripts and tests build ``plugins.Registry([folder])``)."""

_default = EngineRegistry()


def default_registry() -> EngineRegistry:
    """The process-wide registry :func:`contextlab.replay` resolves names through."""
    return _default


def load_engine(name: str, params: Mapping[str, Any] | None = None) -> ContextEngine:
    """A fresh instance of the engine named ``name``.

    Raises:
        EngineError: Unknown name (with "did you mean"), a plugin that fails to import, bad params.
    """
    return _default.load(name, params)


def list_engines(paths: Iterable[str | Path] = ()) -> list[PluginInfo]:
    """Every engine with source, description, version and availability (imports each plugin)."""
    registry = _default
    for path in paths:
        registry.add_path(path)
    return registry.list()


def add_plugin_path(path: str | Path) -> None:
    """Discover plugin folders under ``path`` too."""
    _default.add_path(path)


def register_plugin_module(module: str | types.ModuleType) -> str:
    """Load an engine through ``module.register(ctx)`` and make it resolvable by name."""
    return _default.register_module(module)


def register_engine(engine: type[ContextEngine] | ContextEngine, name: str | None = None) -> str:
    """Make a class or instance resolvable by name."""
    return _default.register_engine(engine, name)


def refresh() -> None:
    """Re-run discovery on next use."""
    _default.refresh()


def engine_from_config(path: str | Path) -> str:
    """The engine a host ``config.yaml`` selects (``context: engine: <name>``; default ``compressor``).

    Read by :func:`contextlab.hostconfig.load_host_config`, the one reader of that file.

    Raises:
        ConfigError: Unreadable file, bad YAML or a wrongly shaped ``context`` section.
    """
    from contextlab.hostconfig import load_host_config

    return load_host_config(path).engine


def load_config_engine(path: str | Path, params: Mapping[str, Any] | None = None) -> ContextEngine:
    """The engine a ``config.yaml`` selects, loaded (never auto-activates anything else)."""
    return resolve_engine(engine_from_config(path), params)


# --------------------------------------------------------------------------- resolution


def known_engine_names() -> list[str]:
    """Names :func:`resolve_engine` accepts: built-ins and discovered plugins."""
    return _default.names()


def resolve_engine(spec: EngineSpec, params: Mapping[str, Any] | None = None) -> ContextEngine:
    """A fresh engine instance for one run: the one way a name, a class or an instance becomes an engine.

    Args:
        spec: A name (built-in or plugin, resolved through the default registry), a ``ContextEngine``
            subclass, or an instance (cloned with ``clone_for_agent()``, so the caller's object is
            never touched by the replay).
        params: Constructor keyword arguments (names and classes only).

    Raises:
        EngineError: Unknown name (with suggestions), bad parameters, or a failing constructor.
    """
    params = dict(params or {})
    if isinstance(spec, str):
        return _default.load(spec, params)
    if is_engine(spec):
        if params:
            raise EngineError("parameters cannot be applied to an engine instance; pass its class instead")
        try:
            cloned: ContextEngine = clone_engine(spec)
        except Exception as error:
            raise EngineError(
                f"engine {engine_label(spec)!r} could not be copied (clone_for_agent raised "  # type: ignore[arg-type]
                f"{type(error).__name__}: {error})"
            ) from None
        return cloned
    if is_engine_class(spec):
        assert isinstance(spec, type)
        return _class_factory(spec, spec.__name__)(params)
    raise EngineError(f"cannot use {spec!r} as an engine: expected a name, a ContextEngine subclass or an instance")
