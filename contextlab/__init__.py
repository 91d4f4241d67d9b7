"""contextlab: replay recorded agent conversations through a simulated Hermes host and candidate
context engines, and measure tokens, compactions, prompt-cache stability, cost and retention."""

from contextlab.compat import install_agent_shim

install_agent_shim()  # before anything imports a plugin written for the real host

from contextlab.api import compare, replay  # noqa: E402
from contextlab.datasets import load_dataset  # noqa: E402
from contextlab.engine import ContextEngine  # noqa: E402
from contextlab.errors import (  # noqa: E402
    ConfigError,
    ContextLabError,
    EngineError,
    TokenizerUnavailable,
    TranscriptError,
)
from contextlab.host import HostSettings, ReplayResult, RequestObserver, RequestView  # noqa: E402
from contextlab.messages import validate_messages  # noqa: E402
from contextlab.tokens import ExactCounter, RoughCounter  # noqa: E402
from contextlab.transcripts import (  # noqa: E402
    Transcript,
    convert_file,
    load_transcript,
    load_transcripts,
    save_transcript,
)

__version__ = "0.1.0"

__all__ = [
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
    "compare",
    "convert_file",
    "load_dataset",
    "load_transcript",
    "load_transcripts",
    "replay",
    "save_transcript",
    "validate_messages",
]
