"""The replay host: a faithful, open-loop simulation of the Hermes Agent turn loop."""

from contextlab.host.observers import RequestObserver, RequestView
from contextlab.host.replay import ReplayHost, run_replay
from contextlab.host.settings import HostSettings
from contextlab.host.trace import COMPACTION_COLUMNS, TRACE_COLUMNS, ReplayResult

__all__ = [
    "COMPACTION_COLUMNS",
    "TRACE_COLUMNS",
    "HostSettings",
    "ReplayHost",
    "ReplayResult",
    "RequestObserver",
    "RequestView",
    "run_replay",
]
