"""Import warnings on the command line: one ``contextlab: warning: ...`` line each, at most a few,
then a count; never Python's raw ``file:line: Category: message`` format."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from contextlab.transcripts.issues import TranscriptWarning

SHOWN = 5
"""Warnings printed in full; the rest are counted."""


@contextmanager
def warning_lines(stream: TextIO | None = None, shown: int = SHOWN) -> Iterator[None]:
    """Collect the :class:`TranscriptWarning` (and other ``UserWarning``) raised inside the block and
    print them as one-line messages when it ends, whether it ends normally or with an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            yield
        finally:
            out = stream or sys.stderr
            relevant = [w for w in caught if issubclass(w.category, UserWarning)]
            seen: set[str] = set()
            lines = []
            for item in relevant:
                text = " ".join(str(item.message).split())  # one line, whatever the message holds
                if text not in seen:
                    seen.add(text)
                    lines.append(text)
            for text in lines[:shown]:
                print(f"contextlab: warning: {text}", file=out)
            if len(lines) > shown:
                only_import = all(issubclass(w.category, TranscriptWarning) for w in relevant)
                kinds = "import warnings" if only_import else "warnings"
                print(f"contextlab: warning: ... and {len(lines) - shown} more {kinds} (not shown)", file=out)
