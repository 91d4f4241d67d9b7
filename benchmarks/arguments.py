"""Command-line values the benchmark scripts share, checked the way argparse reports a usage error."""

from __future__ import annotations

import argparse

from contextlab.errors import TranscriptError
from contextlab.plugins import list_engines
from contextlab.transcripts import Transcript, load_transcript


def whole_numbers(parser: argparse.ArgumentParser, flag: str, text: str, each: str = "each") -> list[int]:
    """``text`` (``flag``'s value) as comma-separated whole numbers of at least 1; anything else ends
    the script with a one-line usage error naming the flag and the value (exit status 2)."""
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        parser.error(f"{flag}: expected comma-separated whole numbers, got {text!r}")
    if min(numbers) < 1:
        parser.error(f"{flag}: {each} must be at least 1, got {text!r}")
    return numbers


def at_least_one(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return number


def engine_names(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """``--engines``' value: comma-separated names of shipped engines, or ``all`` for every one; an
    unknown name ends the script with a one-line usage error listing the shipped ones."""
    shipped = [i.name for i in list_engines() if i.available is not False and i.source in ("builtin", "bundled")]
    engines = shipped if text == "all" else text.split(",")
    unknown = sorted(set(engines) - set(shipped))
    if unknown:
        parser.error(f"--engines: unknown {', '.join(unknown)} (shipped: {', '.join(shipped)})")
    return engines


def recorded_sessions(parser: argparse.ArgumentParser, paths: list[str]) -> list[Transcript]:
    """``--transcript``'s files, parsed; one that does not load ends the script with a one-line
    usage error naming it."""
    loaded = []
    for path in paths:
        try:
            loaded.append(load_transcript(path))
        except (OSError, TranscriptError) as error:
            parser.error(f"--transcript: {error}")
    return loaded
