"""One sweep cell = one (transcript, engine, parameters) run: its identity, its key, and how it runs.

Everything here runs the same way in this process, in a local worker process or on a Dask worker:
the shared inputs (transcripts, engines, settings, observers) are installed once per process with
:func:`install_shared`, then :func:`run_cell` runs one cell and never raises (a failing engine gives a
``failed`` outcome). See ``docs/bench.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

import pandas as pd

from contextlab.api import params_label, replay
from contextlab.engines import EngineSpec, engine_label
from contextlab.host.observers import RequestObserver
from contextlab.host.settings import HostSettings
from contextlab.host.trace import COMPACTION_COLUMNS, TRACE_COLUMNS, build_frame, summarize
from contextlab.tokens import ExactCounter
from contextlab.transcripts import Transcript

Grid = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Job:
    """One cell: indices into the shared transcript and engine lists, and its grid values.

    ``grid`` holds the cell's grid values with scoped keys already stripped of their engine prefix.
    ``weight`` estimates its cost (bigger runs are scheduled first).
    """

    index: int
    transcript: int
    engine: int
    grid: Grid
    weight: int = 0


@dataclass(frozen=True)
class Shared:
    """What every worker needs once (sent when a worker starts, never per cell)."""

    transcripts: list[Transcript]
    engines: list[EngineSpec]
    settings: HostSettings
    params: dict[str, Any]
    observers: list[RequestObserver]
    host_fields: frozenset[str] = field(default_factory=frozenset)
    token_counts: dict[str, int] = field(default_factory=dict)
    """Token counts (``settings.encoding``) of the transcripts' wire texts, counted once by the parent
    so that each worker does not count them again (``ExactCounter.seed``)."""
    probes: bool = True
    """Run the measurement probe (retention, losses, break attribution) in every cell."""


@dataclass
class Outcome:
    """The frames and summary of one finished cell."""

    index: int
    trace: pd.DataFrame
    compactions: pd.DataFrame
    summary: dict[str, Any]
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """The run's other frames (``ReplayResult.frames``: probes, compaction diffs, ...)."""


_PROCESS: dict[str, Any] = {}
"""Per-process state: the shared inputs and the one exact-token memo this process reuses for all its cells."""


def install_shared(shared: Shared, counter: ExactCounter | None = None) -> None:
    """Make ``shared`` the inputs of every :func:`run_cell` call in this process."""
    _PROCESS["shared"] = shared
    if counter is None:
        counter = ExactCounter(shared.settings.encoding)
        counter.seed(shared.token_counts)
    _PROCESS["counter"] = counter


def clear_shared() -> None:
    """Forget the installed inputs (and release the token memo)."""
    _PROCESS.clear()


def installed() -> Shared | None:
    """The inputs installed in this process, if any."""
    shared: Shared | None = _PROCESS.get("shared")
    return shared


def split_grid(job: Job, host_fields: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A cell's grid as (host setting changes, engine parameters)."""
    host = {k: v for k, v in job.grid if k in host_fields}
    engine = {k: v for k, v in job.grid if k not in host_fields}
    return host, engine


def run_cell(job: Job) -> Outcome:
    """Run one cell with the installed inputs; any failure becomes a failed outcome, never an exception."""
    shared: Shared = _PROCESS["shared"]
    transcript = shared.transcripts[job.transcript]
    spec = shared.engines[job.engine]
    host_changes, grid_params = split_grid(job, shared.host_fields)
    engine_params = {**shared.params, **grid_params}
    settings = shared.settings
    try:
        settings = settings.with_(**host_changes) if host_changes else settings
        result = replay(
            transcript,
            spec,
            settings,
            params=engine_params or None,
            observers=shared.observers,
            probes=shared.probes,
            counter=_PROCESS["counter"],
        )
    except Exception as error:  # a bad engine or setting fails this run only
        return failed_outcome(shared, job, "failed", f"{type(error).__name__}: {error}")
    return Outcome(
        job.index, result.trace, result.compactions, {**result.summary, **dict(job.grid)}, dict(result.frames)
    )


def failed_outcome(shared: Shared, job: Job, status: str, reason: str) -> Outcome:
    """An outcome with no rows for a cell that failed, crashed or timed out (``status`` says which)."""
    host_changes, grid_params = split_grid(job, shared.host_fields)
    engine_params = {**shared.params, **grid_params}
    transcript = shared.transcripts[job.transcript]
    try:
        settings = shared.settings.with_(**host_changes)
    except Exception:
        settings = shared.settings  # the bad setting is named in ``reason``
    labels = {
        "transcript": transcript.transcript_id,
        "engine": engine_label(shared.engines[job.engine]),
        "params": params_label(settings, engine_params),
    }
    trace = build_frame([], TRACE_COLUMNS)
    compactions = build_frame([], COMPACTION_COLUMNS)
    base = {
        **labels,
        "model": settings.model or transcript.model or "",
        "context_length": settings.context_length,
        "threshold_tokens": 0,
        "status": status,
        "error": reason,
    }
    summary = {**summarize(trace, compactions, base, {}), "wall_s": 0.0, **dict(job.grid)}
    return Outcome(job.index, trace, compactions, summary)


def transcript_weight(transcript: Transcript) -> int:
    """A cheap estimate of a replay's cost: content characters times requests (history re-sent each time)."""
    chars = sum(len(str(m.get("content") or "")) for m in transcript.messages)
    return chars * max(1, transcript.n_requests) // 1000 + 1


def transcript_digest(transcript: Transcript) -> str:
    """sha256 of everything a replay reads from a transcript (so an edited file is a new cell)."""
    # Every field, so fields added to Transcript later (host events, ...) are covered too.
    payload = {f.name: getattr(transcript, f.name) for f in fields(transcript)}
    text = json.dumps(payload, sort_keys=True, default=_plain, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(value: Any) -> Any:
    """JSON fallback for the digest: dataclasses as dicts (recorded usage, events, facts), else repr."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return repr(value)


def engine_identity(spec: EngineSpec) -> str:
    """A name for an engine spec that is stable across processes (module and class for classes)."""
    if isinstance(spec, str):
        return spec
    cls = spec if isinstance(spec, type) else type(spec)
    return f"{cls.__module__}.{cls.__qualname__}:{engine_label(spec)}"


def fingerprint(obj: Any, depth: int = 3) -> Any:
    """A JSON-able description of an observer's configuration (plain attributes, a few levels deep)."""
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if depth <= 0:
        return type(obj).__qualname__
    if isinstance(obj, list | tuple):
        return [fingerprint(v, depth - 1) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): fingerprint(v, depth - 1) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    attributes = getattr(obj, "__dict__", None)
    if attributes is None:
        return type(obj).__qualname__
    plain = {
        k: fingerprint(v, depth - 1)
        for k, v in sorted(attributes.items())
        # Accumulated per-run state and price tables are not configuration.
        if not k.startswith("__") and k not in ("results", "prices", "_totals", "totals")
    }
    return {"type": f"{type(obj).__module__}.{type(obj).__qualname__}", **plain}


def cell_key(shared: Shared, job: Job, digest: str, version: str) -> str:
    """The resume key of a cell: (transcript digest, engine, parameters, settings, observers, version)."""
    host_changes, grid_params = split_grid(job, shared.host_fields)
    settings = shared.settings.with_(**host_changes) if host_changes else shared.settings
    payload = {
        "transcript": digest,
        "engine": engine_identity(shared.engines[job.engine]),
        "params": {**shared.params, **grid_params},
        "grid": [list(pair) for pair in job.grid],
        "settings": asdict(settings),
        "observers": [fingerprint(o) for o in shared.observers],
        "probes": shared.probes,
        "version": version,
    }
    text = json.dumps(payload, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
