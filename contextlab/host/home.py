"""What the host tells an engine about where it runs: the platform and the Hermes home directory
given to ``on_session_start`` (``docs/host-loop.md`` §Sessions)."""

from __future__ import annotations

import shutil
import tempfile

HOST_PLATFORM = "cli"
"""The platform the host names: the simulated host is the CLI (``agent.platform or "cli"``)."""


class EngineHome:
    """The directory an engine gets as ``hermes_home``.

    The real host passes its ``HERMES_HOME``, where engines keep their stores and read their config.
    A replay passes the directory it was given, or else a fresh temporary one, made on first use and
    removed when the replay ends: an engine's files stay isolated per replay (same inputs, same
    result) and a benchmark never writes into the user's own Hermes home.
    """

    def __init__(self, given: str | None) -> None:
        self._given = given
        self._made: str | None = None

    def path(self) -> str:
        """The directory (made now if it is a temporary one not made yet)."""
        if self._given is not None:
            return self._given
        if self._made is None:
            self._made = tempfile.mkdtemp(prefix="contextlab-hermes-home-")
        return self._made

    def close(self) -> None:
        """Remove the temporary directory, if one was made."""
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)
            self._made = None
