"""What a sweep's transcript sources name: files, folders, glob patterns, or bundled dataset names."""

from __future__ import annotations

import glob
import warnings
from pathlib import Path

from contextlab.errors import ConfigError, UnknownFormat
from contextlab.transcripts import Transcript, TranscriptWarning, load_transcripts
from contextlab.transcripts.formats import NOT_A_FORMAT

TRANSCRIPT_SUFFIXES: tuple[str, ...] = (".json", ".jsonl", ".traj", ".gz", ".md", ".txt", ".db", ".sqlite")
"""File endings a folder is searched for (a file named explicitly is read whatever its name)."""


def expand_source(source: str | Path) -> list[Path]:
    """The transcript files ``source`` names, in a stable order.

    A file is itself; a folder gives every file under it with a transcript-like ending (hidden files
    and folders skipped), sorted; a pattern with ``*``, ``?`` or ``[`` is a glob (``**`` recurses); a
    bare name that is not a path is looked up among the bundled datasets (``coding-agent``).
    """
    text = str(source)
    path = Path(text).expanduser()
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and p.name.lower().endswith(TRANSCRIPT_SUFFIXES)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not files:
            raise ConfigError(f"{path}: folder holds no transcript files ({', '.join(TRANSCRIPT_SUFFIXES)})")
        return files
    if path.exists():
        return [path]
    if any(ch in text for ch in "*?["):
        matches = sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file())
        if not matches:
            raise ConfigError(f"{text}: the pattern matches no files")
        return matches
    return [path]  # the loader names the missing file in its error


def load_source(source: str | Path) -> list[Transcript]:
    """Every conversation ``source`` names (see :func:`expand_source`; a bundled dataset name works too).

    A file named by itself must be a transcript. Among the files a folder or a pattern gives, one in
    no format contextlab reads (a README, a licence) is skipped with a :class:`TranscriptWarning`
    naming it; a broken file of a format contextlab reads is still an error, and so is a folder or
    pattern that gives no transcript at all.
    """
    from contextlab.datasets import DATASETS, load_dataset

    text = str(source)
    if text in DATASETS and not Path(text).exists():
        return [load_dataset(text)]
    paths = expand_source(source)
    named = Path(text).expanduser().is_file()
    found: list[Transcript] = []
    skipped = 0
    for path in paths:
        try:
            found.extend(load_transcripts(path))
        except UnknownFormat as error:
            if named:
                raise
            skipped += 1
            warnings.warn(f"{error.source}: skipped, {NOT_A_FORMAT}", TranscriptWarning, stacklevel=2)
    if not found and skipped:
        raise ConfigError(f"{text}: no transcripts among its {len(paths)} files (all in no format contextlab reads)")
    return found
