"""contextlab's own generated datasets: seeded, reproducible agent sessions with planted gold facts.

``DATASETS`` names each one; :func:`generate` builds it in memory, :func:`write_dataset` writes the
normalized gzip file (byte-identical on every run), :func:`load_dataset` reads the shipped file
(the ``contextlab_datasets`` data package: the repository's ``datasets/`` folder) or generates it
when the file is absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextlab.errors import ConfigError
from contextlab.registry import Registry
from contextlab.transcripts.model import Transcript

SUFFIX = ".jsonl.gz"


@dataclass(frozen=True)
class DatasetSpec:
    """One generated dataset: a name, what it is, and how to build it from its seed."""

    name: str
    description: str
    seed: int
    build: Callable[[int, str], Transcript]

    @property
    def file_name(self) -> str:
        return self.name + SUFFIX


def _coding(tasks: int, modules: int) -> Callable[[int, str], Transcript]:
    def build(seed: int, name: str) -> Transcript:
        from contextlab.datasets.coding import CodingSession

        return CodingSession(seed, tasks=tasks, modules=modules).generate(name)

    return build


def _support(tickets: int) -> Callable[[int, str], Transcript]:
    def build(seed: int, name: str) -> Transcript:
        from contextlab.datasets.support import SupportSession

        return SupportSession(seed, tickets=tickets).generate(name)

    return build


def _dataset_spec(obj: Any, name: str) -> DatasetSpec:
    if not isinstance(obj, DatasetSpec):
        raise ConfigError(f"dataset {name!r}: {obj!r} is not a DatasetSpec")
    return obj


DATASETS: Registry[DatasetSpec] = Registry("dataset", entry_points="contextlab.datasets", convert=_dataset_spec)
"""Dataset name → :class:`DatasetSpec` (a mapping; the ``contextlab.datasets`` entry points add more)."""
for _spec in (
    DatasetSpec(
        "coding-agent",
        "long coding-agent session: 500+ requests, 1M+ tokens, several compactions",
        1,
        _coding(116, 40),
    ),
    DatasetSpec(
        "coding-agent-short",
        "short coding-agent session (about 20 requests): quick demos and tests",
        40,  # a seed whose facts cover every category and role (checked by the tests)
        _coding(2, 5),
    ),
    DatasetSpec(
        "support-agent",
        "customer-support agent over a ticket queue: KB articles, refunds, follow-ups",
        3,
        _support(58),
    ),
):
    DATASETS.register(_spec.name, _spec, description=_spec.description, source="builtin")


def spec(name: str) -> DatasetSpec:
    """The spec of dataset ``name`` (a :class:`ConfigError` naming the known ones otherwise)."""
    return DATASETS.lookup(name)


def generate(name: str) -> Transcript:
    """Build dataset ``name`` in memory (deterministic: same transcript every time)."""
    found = spec(name)
    transcript = found.build(found.seed, name)
    transcript.source = f"contextlab.datasets:{name}"
    transcript.metadata["dataset"] = name
    transcript.metadata["seed"] = found.seed
    return transcript


def bundled_dataset_dir() -> Path | None:
    """The folder the datasets ship in (``datasets/`` of an editable checkout), if installed."""
    from contextlab.bundled import DATASETS_PACKAGE, package_folder

    return package_folder(DATASETS_PACKAGE)


def dataset_path(name: str, folder: Path | None = None) -> Path:
    """Where dataset ``name`` is (or would be) stored: in ``folder``, else in the shipped folder.

    Raises:
        ConfigError: No folder was given and the datasets package is not installed.
    """
    base = folder if folder is not None else bundled_dataset_dir()
    if base is None:
        raise ConfigError("the contextlab_datasets package is not installed; pass a folder (--dir)")
    return base / spec(name).file_name


def write_dataset(name: str, folder: Path | None = None) -> Path:
    """Generate dataset ``name`` and write it as normalized gzip JSON Lines; returns the path."""
    from contextlab.transcripts import native

    target = dataset_path(name, folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    native.dump(generate(name), target)
    return target


def load_dataset(name: str, folder: Path | None = None) -> Transcript:
    """The committed file of dataset ``name``, or a freshly generated copy when there is none."""
    from contextlab.transcripts import load_transcript

    base = folder if folder is not None else bundled_dataset_dir()
    path = None if base is None else dataset_path(name, base)
    return load_transcript(path) if path is not None and path.exists() else generate(name)


def describe(transcript: Transcript, encoding: str = "cl100k_base") -> dict[str, Any]:
    """Size figures of a transcript: requests, messages, exact tokens of its content, facts."""
    from contextlab.messages import wire_message
    from contextlab.tokens import ExactCounter

    counter = ExactCounter(encoding)
    tokens = counter.messages([wire_message(m) for m in transcript.messages])
    return {
        "requests": transcript.n_requests,
        "messages": len(transcript.messages),
        "tokens": tokens,
        "facts": len(transcript.facts),
        "needed_later": sum(1 for f in transcript.facts if f.needed_later),
    }


__all__ = [
    "DATASETS",
    "DatasetSpec",
    "bundled_dataset_dir",
    "dataset_path",
    "describe",
    "generate",
    "load_dataset",
    "spec",
    "write_dataset",
]
