"""Probe targets kept on disk between processes (``docs/metrics.md`` §Cost).

Extracting a transcript's targets is the largest part of a first probed replay in a fresh process
(about 0.13 s of `coding-agent`'s 0.3 s of probe work). The result depends only on the transcript's
content and on the extraction rules, so it is stored as JSON under a key made of both: a
``contextlab replay`` run again on the same file, and every worker of a sweep after the first, read
it back instead (about 20 ms against 130-180 ms). Any change to a rule module's source is a new key, so a
stored result is never older than the code that reads it.

The directory is ``$CONTEXTLAB_TARGET_CACHE`` (``off`` turns the store off), else
``$XDG_CACHE_HOME/contextlab/targets``, else ``~/.cache/contextlab/targets``. A store that cannot be
read or written is skipped: the targets are then extracted as if it were not there (a directory that
cannot be written is named once per process in a ``RuntimeWarning``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from contextlab.transcripts.model import Transcript

ENV_DIRECTORY = "CONTEXTLAB_TARGET_CACHE"
"""Where stored targets live; ``off`` (or ``0``, ``false``, ``no``) turns the store off."""
FORMAT = 1
"""The document layout; part of the key, so a new layout never reads an old file."""
KEEP_FILES = 256
"""Stored transcripts kept: past this, the least recently written files are removed on a write."""

RULE_MODULES = (
    "contextlab.compat",
    "contextlab.engine",
    "contextlab.engines.casefold",
    "contextlab.engines.summarizers.base",
    "contextlab.engines.summarizers.extractive",
    "contextlab.engines.summarizers.template",
    "contextlab.engines.tooltext",
    "contextlab.errors",
    "contextlab.hermes_texts",
    "contextlab.measure.mining",
    "contextlab.measure.scan",
    "contextlab.measure.shell",
    "contextlab.measure.target_store",
    "contextlab.measure.targets",
    "contextlab.measure.text",
    "contextlab.messages",
    "contextlab.reasoning",
    "contextlab.redact",
    "contextlab.textmemo",
    "contextlab.tool_arguments",
    "contextlab.transcripts.model",
)
"""Every contextlab module extraction runs (what ``contextlab.measure.targets`` imports, transitively;
a test keeps the list whole). Their sources are part of the key."""
RULE_DATA = ("data/hermes_texts.yaml",)
"""Package data a rule module reads (the host texts that tell a user's own row from the runtime's):
part of the key too."""

_OFF = frozenset({"off", "0", "false", "no"})
_rules: str | None = None
_unwritable: set[Path] = set()  # directories already named in a warning


def directory() -> Path | None:
    """The store's directory, or None when it is turned off."""
    chosen = os.environ.get(ENV_DIRECTORY)
    if chosen is not None:
        return None if chosen.strip().lower() in _OFF or not chosen.strip() else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextlab" / "targets"


def rules_digest() -> str | None:
    """sha256 of the rule modules' sources and the Python version (None when a source cannot be
    read: the store is not used)."""
    global _rules
    if _rules is None:
        # The interpreter's version too: `re` and `str` classify characters by its Unicode tables.
        digest = hashlib.sha256(f"format {FORMAT}\0{sys.version}".encode())
        for name in RULE_MODULES:
            path = getattr(importlib.import_module(name), "__file__", None)
            if not isinstance(path, str):
                return None  # no source file (a frozen build): extract every time
            try:
                digest.update(name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
            except OSError:
                return None
        for data in RULE_DATA:
            try:
                digest.update(data.encode() + b"\0" + resources.files("contextlab").joinpath(data).read_bytes() + b"\0")
            except OSError:
                return None
        _rules = digest.hexdigest()
    return _rules


def key_of(transcript: Transcript) -> str | None:
    """The store key of ``transcript``'s targets: everything extraction reads, and the rules' sources
    (None when the store is off).

    The content is hashed in its pickled form (a C-level pass: a fifth of the cost of canonical
    JSON). Two equal transcripts may pickle differently (shared objects, key order): that is a miss,
    never a wrong hit, since equal bytes unpickle to equal content."""
    rules = rules_digest() if directory() is not None else None
    if rules is None:
        return None  # the store is off (or unusable): no key to compute
    read = (
        transcript.messages,
        transcript.facts,
        transcript.metadata.get("fact_uses"),
        transcript.metadata.get("tool_calls"),
    )
    digest = hashlib.sha256(rules.encode())
    try:
        pickle.Pickler(_DigestWriter(digest.update), protocol=pickle.HIGHEST_PROTOCOL).dump(read)
    except Exception:  # an object pickle cannot take (any error type): extract without the store
        return None
    return digest.hexdigest()[:40]


class _DigestWriter:
    """A write-only file that feeds a digest. The pickler hands it its frames as it fills them, so the
    pickle is hashed while it is in the cache and never held whole: ``pickle.dumps`` and then joining
    the rules to it built two copies of a 4.5 MB pickle, whose fresh pages a new process pays for
    (the key took 10-11 ms in a forked child, 5.7-5.9 ms so; the same bytes are hashed)."""

    __slots__ = ("write",)

    def __init__(self, update: Callable[[bytes], object]) -> None:
        self.write = update


def load(key: str) -> dict[str, Any] | None:
    """The document stored under ``key`` (None: absent, unreadable or not a JSON object)."""
    folder = directory()
    if folder is None:
        return None
    try:
        document = json.loads((folder / f"{key}.json").read_bytes())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def save(key: str, document: dict[str, Any]) -> None:
    """Store ``document`` under ``key``: written to a temporary file and renamed, so a reader never
    sees half a file; nothing happens when the directory cannot be written."""
    folder = directory()
    if folder is None:
        return
    target = folder / f"{key}.json"
    partial = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.partial"  # one writer per name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(document, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        os.replace(partial, target)
        _prune(folder)
    except (OSError, ValueError) as error:  # a read-only or full disk; text the codec cannot write
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        if isinstance(error, OSError) and folder not in _unwritable:
            _unwritable.add(folder)
            reason = error.strerror or type(error).__name__
            warnings.warn(
                f"probe targets are not stored: {folder} cannot be written ({reason}); they are extracted"
                f" again in each process (set {ENV_DIRECTORY} to a writable folder, or to 'off')",
                RuntimeWarning,
                stacklevel=2,
            )


def _prune(folder: Path) -> None:
    """Keep the :data:`KEEP_FILES` most recently written documents."""
    stored = [entry for entry in os.scandir(folder) if entry.name.endswith(".json")]
    if len(stored) <= KEEP_FILES:
        return
    stored.sort(key=lambda entry: entry.stat().st_mtime_ns)
    for entry in stored[: len(stored) - KEEP_FILES]:
        Path(entry.path).unlink(missing_ok=True)
