"""One exception hierarchy for everything contextlab raises on bad input or bad engines."""

from __future__ import annotations


class ContextLabError(Exception):
    """Root of every error contextlab raises deliberately.

    The CLI prints ``str(error)`` on one line and exits 2; anything else is a bug.
    """


class TranscriptError(ContextLabError):
    """A transcript file could not be read: names the file, the line or message index, and what was expected."""

    def __init__(self, source: str, where: str | None, problem: str) -> None:
        self.source = source
        self.where = where
        self.problem = problem
        location = f"{source}:{where}" if where else source
        super().__init__(f"{location}: {problem}")


class UnknownFormat(TranscriptError):
    """A file in no format contextlab reads (rather than a broken file of a format it does read):
    a folder swept for transcripts skips such files (a README, a licence) with a warning."""


class EngineError(ContextLabError):
    """An engine could not be found, loaded or configured."""


class ConfigError(ContextLabError):
    """A settings value or configuration file is invalid."""


class TokenizerUnavailable(ContextLabError):
    """An exact tokenizer vocabulary could not be loaded, even offline."""
