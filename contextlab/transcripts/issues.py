"""Recoverable oddities found while importing: warned about and recorded, never silently dropped.

Fatal problems raise :class:`~contextlab.errors.TranscriptError`; an oddity the importer can work
around (an unknown content block, a tool result without a matching call) is reported through
:class:`TranscriptWarning` and listed in ``transcript.metadata["import_warnings"]`` so that it
survives conversion to the native format.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

WARNINGS_KEY = "import_warnings"


class TranscriptWarning(UserWarning):
    """A recoverable oddity in a transcript file (see ``metadata["import_warnings"]``)."""


@dataclass
class ImportLog:
    """Collects the warnings of one transcript while it is imported."""

    source: str
    entries: list[str] = field(default_factory=list)

    def warn(self, where: str | None, problem: str) -> None:
        """Record an oddity and emit a :class:`TranscriptWarning` naming file and location."""
        entry = f"{where}: {problem}" if where else problem
        self.entries.append(entry)
        warnings.warn(f"{self.source}:{entry}", TranscriptWarning, stacklevel=3)

    def into(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """``metadata`` with the recorded warnings added (unchanged when there were none)."""
        if self.entries:
            metadata[WARNINGS_KEY] = list(self.entries)
        return metadata
