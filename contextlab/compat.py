"""Make ``from agent.context_engine import ContextEngine`` work for plugins written for the real host.

The finder is appended to the *end* of ``sys.meta_path``: Python asks it only after every normal
finder has failed to find ``agent``. When the real Hermes Agent package is installed, its ``agent``
package is found first and this shim never answers, so contextlab cannot shadow the real host.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

SHIM_PACKAGE = "agent"
SHIM_MODULE = "agent.context_engine"


class _AgentShimLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == SHIM_PACKAGE:
            module.__path__ = []
            module.__doc__ = "contextlab's stand-in for the Hermes Agent package (only context_engine)."
            module.__contextlab_shim__ = True  # type: ignore[attr-defined]
            return
        from contextlab import engine

        module.ContextEngine = engine.ContextEngine  # type: ignore[attr-defined]
        module.__doc__ = "contextlab's stand-in for agent.context_engine."
        module.__contextlab_shim__ = True  # type: ignore[attr-defined]


class _AgentShimFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == SHIM_PACKAGE:
            return importlib.machinery.ModuleSpec(fullname, _AgentShimLoader(), is_package=True)
        if fullname == SHIM_MODULE:
            parent = sys.modules.get(SHIM_PACKAGE)
            # Only complete our own stand-in; a real ``agent`` package answers for itself.
            if parent is not None and getattr(parent, "__contextlab_shim__", False):
                return importlib.machinery.ModuleSpec(fullname, _AgentShimLoader())
        return None


_FINDER = _AgentShimFinder()


def install_agent_shim() -> None:
    """Register the fallback finder once (idempotent)."""
    if not any(isinstance(f, _AgentShimFinder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)


HOST_MODULE = "agent.context_engine"


def host_engine_class() -> type | None:
    """The real host's ``agent.context_engine.ContextEngine`` when it is loaded and is not contextlab's stand-in.

    Only ``sys.modules`` is consulted: a plugin written for the host imports the module itself, so
    contextlab never imports the real host just to ask.
    """
    module = sys.modules.get(HOST_MODULE)
    if module is None or getattr(module, "__contextlab_shim__", False):
        return None
    cls = getattr(module, "ContextEngine", None)
    return cls if isinstance(cls, type) else None


def engine_bases() -> tuple[type, ...]:
    """The ABCs an engine may subclass: contextlab's, plus the real host's when it is loaded."""
    from contextlab.engine import ContextEngine

    host = host_engine_class()
    if host is None or host is ContextEngine:
        return (ContextEngine,)
    return (ContextEngine, host)
