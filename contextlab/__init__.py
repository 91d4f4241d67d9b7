"""contextlab: replay recorded agent conversations through a simulated Hermes host and candidate
context engines, and measure tokens, compactions, prompt-cache stability, cost and retention.

The package is lazy: ``import contextlab`` (and ``import contextlab.engines.parts``, which plugins
do inside the real host) loads no pandas, pyarrow or matplotlib. Each public name below is imported
from its module on first access (PEP 562 module ``__getattr__``); ``docs/notebooks.md`` §"Light core"
says why.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from contextlab.compat import install_agent_shim

install_agent_shim()  # before anything imports a plugin written for the real host

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "compare": "contextlab.api",
    "replay": "contextlab.api",
    "CacheObserver": "contextlab.cache",
    "calibrate": "contextlab.calibrate",
    "load_dataset": "contextlab.datasets",
    "ContextEngine": "contextlab.engine",
    "ConfigError": "contextlab.errors",
    "ContextLabError": "contextlab.errors",
    "EngineError": "contextlab.errors",
    "TokenizerUnavailable": "contextlab.errors",
    "TranscriptError": "contextlab.errors",
    "HostSettings": "contextlab.host",
    "ReplayResult": "contextlab.host",
    "RequestObserver": "contextlab.host",
    "RequestView": "contextlab.host",
    "validate_messages": "contextlab.messages",
    "ExactCounter": "contextlab.tokens",
    "RoughCounter": "contextlab.tokens",
    "Transcript": "contextlab.transcripts",
    "convert_file": "contextlab.transcripts",
    "load_transcript": "contextlab.transcripts",
    "load_transcripts": "contextlab.transcripts",
    "save_transcript": "contextlab.transcripts",
}
"""Public name → the module that defines it (imported on first access)."""

__all__ = [
    "CacheObserver",
    "ConfigError",
    "ContextEngine",
    "ContextLabError",
    "EngineError",
    "ExactCounter",
    "HostSettings",
    "ReplayResult",
    "RequestObserver",
    "RequestView",
    "RoughCounter",
    "TokenizerUnavailable",
    "Transcript",
    "TranscriptError",
    "__version__",
    "calibrate",
    "compare",
    "convert_file",
    "load_dataset",
    "load_transcript",
    "load_transcripts",
    "replay",
    "save_transcript",
    "validate_messages",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # ``import contextlab; contextlab.plugins.add_plugin_path(...)`` worked when the package was
        # eager; a submodule is still reachable as an attribute, imported on first use.
        if not name.startswith("_") and importlib.util.find_spec(f"contextlab.{name}") is not None:
            return importlib.import_module(f"contextlab.{name}")
        raise AttributeError(f"module 'contextlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # static view of the lazy names, for mypy and editors
    from contextlab.api import compare, replay
    from contextlab.cache import CacheObserver
    from contextlab.calibrate import calibrate
    from contextlab.datasets import load_dataset
    from contextlab.engine import ContextEngine
    from contextlab.errors import ConfigError, ContextLabError, EngineError, TokenizerUnavailable, TranscriptError
    from contextlab.host import HostSettings, ReplayResult, RequestObserver, RequestView
    from contextlab.messages import validate_messages
    from contextlab.tokens import ExactCounter, RoughCounter
    from contextlab.transcripts import Transcript, convert_file, load_transcript, load_transcripts, save_transcript
