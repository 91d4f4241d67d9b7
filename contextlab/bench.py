"""Sweeps: replay every transcript x engine x parameter combination, serially or in a process pool.

Results come back in a fixed order (transcript, then engine, then grid combination, in the order
given) whatever order the workers finish in, so a sweep's frames are identical for 1 or N workers
(timing columns aside). Each worker keeps one exact-token memo for all its runs. A failing engine
marks its own runs failed with the reason; the other runs complete.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, fields
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.api import params_label, replay
from contextlab.engines import EngineSpec
from contextlab.errors import ConfigError
from contextlab.host.observers import RequestObserver
from contextlab.host.settings import HostSettings
from contextlab.host.trace import COMPACTION_COLUMNS, TRACE_COLUMNS, build_frame, summarize, write_frame
from contextlab.tokens import ExactCounter
from contextlab.transcripts import Transcript, load_transcripts

HOST_FIELDS: frozenset[str] = frozenset(f.name for f in fields(HostSettings))
"""Grid keys that are host settings; every other grid key is an engine constructor parameter."""

FRAME_NAMES: tuple[str, ...] = ("trace", "compactions", "summary")
"""Base names of the files :meth:`BenchResult.write` produces."""


@dataclass
class BenchResult:
    """The frames of a sweep, in job order.

    Attributes:
        trace: Long per-request trace across all runs.
        compactions: Long compaction-event frame across all runs.
        summaries: One row per run, with the grid values as extra columns and ``status``/``error``.
    """

    trace: pd.DataFrame
    compactions: pd.DataFrame
    summaries: pd.DataFrame

    @property
    def failed(self) -> pd.DataFrame:
        """Summary rows of the runs that failed."""
        return self.summaries[self.summaries["status"] != "ok"]

    def write(self, folder: str | Path, fmt: str = "csv") -> dict[str, Path]:
        """Write ``trace``, ``compactions`` and ``summary`` files (csv or parquet) into ``folder``."""
        if fmt not in ("csv", "parquet"):
            raise ConfigError(f"unsupported format {fmt!r}; use csv or parquet")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        frames = {"trace": self.trace, "compactions": self.compactions, "summary": self.summaries}
        return {name: write_frame(_storable(frames[name]), folder / f"{name}.{fmt}") for name in FRAME_NAMES}


@dataclass(frozen=True)
class Job:
    """One run of a sweep: indices into the shared transcript list and engine list."""

    index: int
    transcript: int
    engine: int
    grid: tuple[tuple[str, Any], ...]


def expand_grid(grid: Mapping[str, Sequence[Any]] | None) -> list[tuple[tuple[str, Any], ...]]:
    """The cartesian product of ``grid`` as ordered ``(key, value)`` tuples (keys in given order)."""
    if not grid:
        return [()]
    keys = list(grid)
    values: list[list[Any]] = []
    for key in keys:
        options = grid[key]
        if isinstance(options, str | bytes) or not isinstance(options, Iterable):
            raise ConfigError(f"grid[{key!r}]: expected a list of values, got {options!r}")
        listed = list(options)
        if not listed:
            raise ConfigError(f"grid[{key!r}]: the list of values is empty")
        values.append(listed)
    return [tuple(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def _check_host_values(settings: HostSettings, grid: Mapping[str, Sequence[Any]]) -> None:
    """Reject bad host-setting values before any run starts (a typo should not cost a sweep)."""
    for key, options in grid.items():
        if key not in HOST_FIELDS:
            continue
        for value in options:
            try:
                settings.with_(**{key: value})
            except ConfigError as error:
                raise ConfigError(f"grid {key}={value!r}: {error}") from error
            except Exception as error:
                raise ConfigError(f"grid {key}={value!r}: invalid value ({type(error).__name__}: {error})") from error


def collect_transcripts(
    sources: Iterable[Transcript | str | Path] | Transcript | str | Path,
) -> list[Transcript]:
    """Transcripts from objects and paths (a path contributes every conversation in the file)."""
    if isinstance(sources, Transcript | str | Path):
        sources = [sources]
    found: list[Transcript] = []
    for source in sources:
        found.extend([source] if isinstance(source, Transcript) else load_transcripts(source))
    if not found:
        raise ConfigError("bench: no transcripts given")
    return found


def bench(
    transcripts: Iterable[Transcript | str | Path] | Transcript | str | Path,
    engines: Sequence[EngineSpec],
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    settings: HostSettings | None = None,
    params: Mapping[str, Any] | None = None,
    observers: Sequence[RequestObserver] = (),
    workers: int = 1,
    progress: bool | None = None,
    counter: ExactCounter | None = None,
) -> BenchResult:
    """Replay the cartesian product transcripts x engines x grid.

    Args:
        transcripts: Transcripts, transcript files, or a mix.
        engines: Engine names or ``ContextEngine`` classes. With ``workers > 1`` they are pickled by
            reference, so classes must be importable (not defined in a notebook cell).
        grid: ``{key: [values]}``. Keys naming a :class:`HostSettings` field (``threshold_percent``,
            ``context_length``, ...) vary the host; any other key is an engine constructor parameter.
        settings: Base host settings for every run.
        params: Base engine parameters for every run (grid values override them).
        observers: Measurement models for every run (cloned per run; must be picklable for a pool).
        workers: 1 runs in this process; N > 1 uses a local process pool.
        progress: Show a ``tqdm.auto`` bar; ``None`` means on unless ``TQDM_DISABLE`` is set.
        counter: Exact-token memo to reuse in this process (``workers=1`` only).

    Returns:
        The long trace, compaction and summary frames, in job order.

    Raises:
        ConfigError: Empty inputs, a bad grid, or engines/observers a process pool cannot send.
    """
    if not engines:
        raise ConfigError("bench: no engines given")
    if workers < 1:
        raise ConfigError(f"bench: workers must be >= 1, got {workers}")
    found = collect_transcripts(transcripts)
    combos = expand_grid(grid)
    settings = settings or HostSettings()
    _check_host_values(settings, grid or {})
    base_params = dict(params or {})
    jobs = [
        Job(index, t, e, combo)
        for index, (t, e, combo) in enumerate(itertools.product(range(len(found)), range(len(engines)), combos))
    ]
    shared = _Shared(found, list(engines), settings, base_params, list(observers))
    bar = _progress_bar(len(jobs), progress)
    try:
        if workers == 1 or len(jobs) == 1:
            _init_worker(shared, counter)
            outcomes = []
            for job in jobs:
                outcomes.append(_run_job(job))
                bar(1)
            chunks = [_merge(outcomes)]
        else:
            chunks = _run_pool(shared, jobs, min(workers, len(jobs)), bar)
    finally:
        bar(0, close=True)
        _WORKER.clear()
    return _assemble(chunks)


@dataclass(frozen=True)
class _Shared:
    """What every worker needs once (sent at pool start, not per job)."""

    transcripts: list[Transcript]
    engines: list[EngineSpec]
    settings: HostSettings
    params: dict[str, Any]
    observers: list[RequestObserver]


@dataclass
class _Outcome:
    index: int
    trace: pd.DataFrame
    compactions: pd.DataFrame
    summary: dict[str, Any]


_WORKER: dict[str, Any] = {}
"""Per-process state: the shared inputs and the one exact-token memo of this worker."""


def _init_worker(shared: _Shared, counter: ExactCounter | None = None) -> None:
    _WORKER["shared"] = shared
    _WORKER["counter"] = counter or ExactCounter(shared.settings.encoding)


def _run_job(job: Job) -> _Outcome:
    """Run one job in this process; any failure becomes a failed run, never an exception."""
    shared: _Shared = _WORKER["shared"]
    transcript = shared.transcripts[job.transcript]
    spec = shared.engines[job.engine]
    host_changes = {k: v for k, v in job.grid if k in HOST_FIELDS}
    engine_params = {**shared.params, **{k: v for k, v in job.grid if k not in HOST_FIELDS}}
    label = engine_label(spec)
    settings = shared.settings
    try:
        settings = settings.with_(**host_changes) if host_changes else settings
        result = replay(
            transcript,
            spec,
            settings,
            params=engine_params or None,
            observers=shared.observers,
            counter=_WORKER["counter"],
        )
    except Exception as error:  # a bad engine or setting fails this run only
        return _failed(job, transcript, label, settings, engine_params, f"{type(error).__name__}: {error}")
    summary = {**result.summary, **dict(job.grid)}
    return _Outcome(job.index, result.trace, result.compactions, summary)


def _failed(
    job: Job,
    transcript: Transcript,
    label: str,
    settings: HostSettings,
    params: Mapping[str, Any],
    reason: str,
) -> _Outcome:
    labels = {
        "transcript": transcript.transcript_id,
        "engine": label,
        "params": params_label(settings, params),
    }
    trace = build_frame([], TRACE_COLUMNS)
    compactions = build_frame([], COMPACTION_COLUMNS)
    base = {
        **labels,
        "model": settings.model or transcript.model or "",
        "context_length": settings.context_length,
        "threshold_tokens": 0,
        "status": "failed",
        "error": reason,
    }
    summary = {**summarize(trace, compactions, base, {}), "wall_s": 0.0, **dict(job.grid)}
    return _Outcome(job.index, trace, compactions, summary)


def engine_label(spec: EngineSpec) -> str:
    """The name a run is labelled with before its engine exists (the spec's name or class name)."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, type):
        return spec.__name__
    try:
        return str(spec.name)
    except Exception:
        return type(spec).__name__


@dataclass
class _Chunk:
    """Consecutive runs merged into one frame each: far fewer objects to pickle back from a worker."""

    trace: pd.DataFrame
    compactions: pd.DataFrame
    summaries: list[dict[str, Any]]


def _merge(outcomes: list[_Outcome]) -> _Chunk:
    traces = [o.trace for o in outcomes if len(o.trace)]
    events = [o.compactions for o in outcomes if len(o.compactions)]
    return _Chunk(
        pd.concat(traces, ignore_index=True) if traces else build_frame([], TRACE_COLUMNS),
        pd.concat(events, ignore_index=True) if events else build_frame([], COMPACTION_COLUMNS),
        [o.summary for o in outcomes],
    )


def _run_batch(batch: list[Job]) -> _Chunk:
    """All runs of one transcript in one task: its token counts stay in one worker's memo."""
    return _merge([_run_job(job) for job in batch])


def _run_pool(shared: _Shared, jobs: list[Job], workers: int, bar: Callable[..., None]) -> list[_Chunk]:
    _check_picklable(shared)
    batches: dict[int, list[Job]] = {}
    for job in jobs:
        batches.setdefault(job.transcript, []).append(job)
    chunks: dict[int, _Chunk] = {}
    # spawn: workers start clean (no inherited threads or locks from a notebook kernel), and engine
    # classes are found by import, exactly as they will be on any other machine.
    with ProcessPoolExecutor(
        workers, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(shared,)
    ) as pool:
        futures = {pool.submit(_run_batch, batch): key for key, batch in batches.items()}
        for future in as_completed(futures):
            key = futures[future]
            try:
                chunks[key] = future.result()
            except Exception as error:  # the worker died (os._exit, segfault): fail those runs only
                reason = f"worker failed: {type(error).__name__}: {error}"
                chunks[key] = _merge([_lost(shared, job, reason) for job in batches[key]])
            bar(len(batches[key]))
    # Jobs are numbered transcript-major, so transcript order is job order.
    return [chunks[key] for key in sorted(chunks)]


def _lost(shared: _Shared, job: Job, reason: str) -> _Outcome:
    host_changes = {k: v for k, v in job.grid if k in HOST_FIELDS}
    settings = shared.settings.with_(**host_changes)  # validated before the pool started
    transcript = shared.transcripts[job.transcript]
    return _failed(job, transcript, engine_label(shared.engines[job.engine]), settings, shared.params, reason)


def _check_picklable(shared: _Shared) -> None:
    for spec in shared.engines:
        cls = spec if isinstance(spec, type) else type(spec)
        if not isinstance(spec, str) and cls.__module__ == "__main__":
            # Pickles fine here, but a fresh worker has another __main__ (a notebook kernel's or a
            # script's) and cannot find the class: refuse now rather than fail every run later.
            raise ConfigError(
                f"bench: engine {engine_label(spec)!r} is defined in __main__ (a notebook cell or a script), "
                "which worker processes cannot import; move it to a module, or use workers=1"
            )
        try:
            pickle.dumps(spec)
        except Exception as error:
            raise ConfigError(
                f"bench: engine {engine_label(spec)!r} cannot be sent to a worker process ({error}); "
                "define it in an importable module, or use workers=1"
            ) from error
    try:
        pickle.dumps(shared.observers)
    except Exception as error:
        raise ConfigError(f"bench: observers cannot be sent to a worker process ({error}); use workers=1") from error


def _assemble(chunks: list[_Chunk]) -> BenchResult:
    merged = _merge([_Outcome(0, c.trace, c.compactions, {}) for c in chunks])
    summaries = pd.DataFrame([summary for chunk in chunks for summary in chunk.summaries])
    return BenchResult(merged.trace, merged.compactions, summaries)


def _storable(frame: pd.DataFrame) -> pd.DataFrame:
    """Lists and dicts (``violation_rules``) as JSON-ish strings, so CSV and Parquet both accept them."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object and out[column].map(lambda v: isinstance(v, list | dict | tuple)).any():
            out[column] = out[column].map(lambda v: repr(v) if isinstance(v, list | dict | tuple) else v)
    return out


def _progress_bar(total: int, progress: bool | None) -> Callable[..., None]:
    """A ``bar(n, close=False)`` callable over :func:`contextlab.progress.progress_bar` (tqdm.auto
    when installed, else the core install's text bar with an ETA)."""
    from contextlab.progress import progress_bar

    handle = progress_bar(total, "bench", unit="run", enabled=progress)

    def update(n: int, close: bool = False) -> None:
        if n:
            handle.update(n)
        if close:
            handle.close()

    return update
