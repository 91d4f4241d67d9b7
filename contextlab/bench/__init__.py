"""Sweeps: replay every transcript x engine x parameter cell, in this process, a local pool or on Dask.

Results come back in a fixed order (transcript, then engine, then grid combination, in the order
given) whatever order the workers finish in, so a sweep's frames are identical for 1 or N workers and
for either executor (timing columns aside). Cells are scheduled largest first; each worker receives
the parsed transcripts once and keeps one exact-token memo for all its cells. A failing engine marks
its own runs ``failed``; a worker that dies marks its cell ``crashed``; a cell past ``run_timeout``
is stopped (``timeout``); the other runs complete. With ``out``, finished cells are kept on disk and a
re-run skips them. Design: ``docs/bench.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import cloudpickle
import pandas as pd

from contextlab.bench.cells import (
    Job,
    Outcome,
    Shared,
    cell_key,
    clear_shared,
    failed_outcome,
    install_shared,
    run_cell,
    transcript_digest,
    transcript_weight,
)
from contextlab.bench.grid import check_engine_names, expand_grid, plan
from contextlab.bench.schema import write_table
from contextlab.bench.sources import load_source
from contextlab.bench.store import CellStore
from contextlab.engines import EngineSpec, engine_label
from contextlab.errors import ConfigError
from contextlab.host.observers import RequestObserver
from contextlab.host.settings import HostSettings
from contextlab.host.trace import COMPACTION_COLUMNS, TRACE_COLUMNS, build_frame
from contextlab.messages import wire_message
from contextlab.tokens import ExactCounter
from contextlab.transcripts import Transcript

__all__ = ["FRAME_NAMES", "HOST_FIELDS", "BenchResult", "bench", "collect_transcripts", "engine_label", "expand_grid"]

HOST_FIELDS: frozenset[str] = frozenset(f.name for f in fields(HostSettings))
"""Grid keys that are host settings; every other grid key is an engine constructor parameter."""

FRAME_NAMES: tuple[str, ...] = ("trace", "compactions", "summary")
"""Base names of the files :meth:`BenchResult.write` produces."""

EXECUTORS: tuple[str, ...] = ("local", "dask")


@dataclass
class BenchResult:
    """The frames of a sweep, in cell order.

    Attributes:
        trace: Long per-request trace across all runs.
        compactions: Long compaction-event frame across all runs.
        summaries: One row per run, with the grid values as extra columns and ``status``/``error``
            (``ok``, ``failed``, ``crashed`` or ``timeout``).
        reused: Cells taken from a previous run into the same ``out`` folder instead of re-run.
    """

    trace: pd.DataFrame
    compactions: pd.DataFrame
    summaries: pd.DataFrame
    reused: int = 0
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Every run's other frames (``ReplayResult.frames``: probes, compaction diffs, ...), concatenated
    per name in cell order; each row names its run (``transcript``, ``engine``, ``params``)."""

    @property
    def failed(self) -> pd.DataFrame:
        """Summary rows of the runs that did not finish ``ok``."""
        return self.summaries[self.summaries["status"] != "ok"]

    def write(self, folder: str | Path, fmt: str = "csv") -> dict[str, Path]:
        """Write ``trace``, ``compactions``, ``summary`` and one file per name of :attr:`frames`
        (``probes``, ``compaction_diff``, ...): csv, or parquet with a declared schema."""
        if fmt not in ("csv", "parquet"):
            raise ConfigError(f"unsupported format {fmt!r}; use csv or parquet")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        frames = {"trace": self.trace, "compactions": self.compactions, "summary": self.summaries}
        written = {name: write_table(frames[name], folder / f"{name}.{fmt}", name) for name in FRAME_NAMES}
        for name, frame in self.frames.items():
            written[name] = write_table(frame, folder / f"{name}.{fmt}", name)
        return written


def collect_transcripts(
    sources: Iterable[Transcript | str | Path] | Transcript | str | Path,
) -> list[Transcript]:
    """Transcripts from objects, files, folders, globs and bundled dataset names (a file gives every
    conversation in it; a folder every transcript file under it, in name order)."""
    if isinstance(sources, Transcript | str | Path):
        sources = [sources]
    found: list[Transcript] = []
    for source in sources:
        found.extend([source] if isinstance(source, Transcript) else load_source(source))
    if not found:
        raise ConfigError("bench: no transcripts given")
    return found


def _check_host_values(settings: HostSettings, plans: list[list[tuple[tuple[str, Any], ...]]]) -> None:
    """Reject bad host-setting values before any run starts (a typo should not cost a sweep)."""
    for combos in plans:
        for combo in combos:
            for key, value in combo:
                if key not in HOST_FIELDS:
                    continue
                try:
                    settings.with_(**{key: value})
                except ConfigError as error:
                    raise ConfigError(f"grid {key}={value!r}: {error}") from error
                except Exception as error:
                    raise ConfigError(
                        f"grid {key}={value!r}: invalid value ({type(error).__name__}: {error})"
                    ) from error


def bench(
    transcripts: Iterable[Transcript | str | Path] | Transcript | str | Path,
    engines: Sequence[EngineSpec],
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    settings: HostSettings | None = None,
    params: Mapping[str, Any] | None = None,
    observers: Sequence[RequestObserver] = (),
    probes: bool = True,
    workers: int = 1,
    executor: str = "local",
    scheduler: str | None = None,
    run_timeout: float | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    counter: ExactCounter | None = None,
) -> BenchResult:
    """Replay every cell of transcripts x engines x grid.

    Args:
        transcripts: Transcripts, transcript files, folders, or a mix.
        engines: Engine names, ``ContextEngine`` classes or instances. Worker processes receive them
            by value (cloudpickle), so classes defined in a notebook cell work with any executor.
        grid: ``{key: [values]}``. A key naming a :class:`HostSettings` field (``threshold_percent``,
            ``context_length``, ...) varies the host; any other key is an engine constructor parameter.
            ``ENGINE.key`` applies to that engine only; an unscoped parameter an engine does not take
            is a :class:`ConfigError` before anything runs.
        settings: Base host settings for every run.
        params: Base engine parameters for every run (grid values override them).
        observers: Measurement models for every run (cloned per run).
        probes: Run the measurement probe in every run (retention, losses, diffs, break attribution;
            ``docs/metrics.md``). Off, a sweep runs faster and its runs carry no probe columns or frames.
        workers: Processes. 1 runs in this process (unless ``run_timeout`` is set, which needs a worker
            process it can stop); N > 1 uses a crash-proof local pool, or N local Dask workers.
        executor: ``"local"`` or ``"dask"`` (``pip install 'contextlab[dask]'``).
        scheduler: With ``executor="dask"``, the address of an existing scheduler (``tcp://host:8786``);
            None starts a local cluster of ``workers`` processes.
        run_timeout: Seconds one cell may run before its worker is stopped (status ``timeout``).
        out: Folder whose ``cells/`` keeps finished cells: a re-run skips them (resume).
        progress: Show a progress bar with an ETA; ``None`` means on unless ``TQDM_DISABLE`` is set.
        counter: Exact-token memo to reuse in this process (in-process runs only).

    Returns:
        The long trace, compaction and summary frames, in cell order.

    Raises:
        ConfigError: Empty inputs, an unknown engine, a bad grid, or engines a worker cannot receive.
    """
    if not engines:
        raise ConfigError("bench: no engines given")
    if workers < 1:
        raise ConfigError(f"bench: workers must be >= 1, got {workers}")
    if executor not in EXECUTORS:
        raise ConfigError(f"bench: executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if run_timeout is not None and run_timeout <= 0:
        raise ConfigError(f"bench: run_timeout must be positive, got {run_timeout}")
    if run_timeout is not None and executor == "dask":
        raise ConfigError("bench: run_timeout works with the local executor only (Dask cannot stop a running task)")
    engines = list(engines)
    check_engine_names(engines)
    settings = settings or HostSettings()
    base_params = dict(params or {})
    plans = plan(engines, grid, base_params, HOST_FIELDS)
    _check_host_values(settings, plans)
    found = collect_transcripts(transcripts)
    weights = [transcript_weight(t) for t in found]
    jobs: list[Job] = []
    for t, e in itertools.product(range(len(found)), range(len(engines))):
        for combo in plans[e]:
            jobs.append(Job(len(jobs), t, e, combo, weights[t]))
    shared = Shared(found, engines, settings, base_params, list(observers), HOST_FIELDS, probes=probes)
    outcomes: dict[int, Outcome] = {}
    store = CellStore(out) if out is not None else None
    keys = _cell_keys(shared, jobs) if store is not None else {}
    if store is not None:
        for job in jobs:
            stored = store.load(keys[job.index])
            if stored is not None:
                stored.index = job.index
                outcomes[job.index] = stored
    reused = len(outcomes)
    todo = [job for job in jobs if job.index not in outcomes]
    bar = _progress_bar(len(todo), progress)

    def done(outcome: Outcome) -> None:
        outcomes[outcome.index] = outcome
        if store is not None:
            store.save(keys[outcome.index], outcome)
        bar(1)

    try:
        if todo:
            _execute(shared, todo, workers, executor, scheduler, run_timeout, counter, done)
    finally:
        bar(0, close=True)
    return _assemble([outcomes[job.index] for job in jobs], reused)


def _execute(
    shared: Shared,
    todo: list[Job],
    workers: int,
    executor: str,
    scheduler: str | None,
    run_timeout: float | None,
    counter: ExactCounter | None,
    done: Callable[[Outcome], None],
) -> None:
    if executor == "local" and run_timeout is None and (workers == 1 or len(todo) == 1):
        install_shared(shared, counter)
        try:
            for job in todo:
                done(run_cell(job))
        finally:
            clear_shared()
        return
    # Largest cells first, so one big transcript does not start last and leave the other workers idle.
    scheduled = sorted(todo, key=lambda job: (-job.weight, job.index))

    def lost(job: Job, status: str, reason: str) -> Outcome:
        return failed_outcome(shared, job, status, reason)

    if executor == "dask":
        from contextlab.bench.dask import run_dask

        run_dask(_worker_inputs(shared), scheduled, workers, scheduler, done, lost)
        return
    from contextlab.bench.pool import LocalPool

    pool = LocalPool(None, min(workers, len(todo)), run_timeout)
    pool.start()  # the workers import the library while this process prepares their inputs
    try:
        pool.provide(_worker_inputs(shared))
    except BaseException:
        pool.close()
        raise
    pool.run(scheduled, done, lost)


def _worker_inputs(shared: Shared) -> bytes:
    """The blob every worker loads once. Each worker would count the transcripts' texts again; this
    process counts them once for all (``Shared.token_counts``)."""
    return _serialize(replace(shared, token_counts=transcript_token_counts(shared)))


def transcript_token_counts(shared: Shared) -> dict[str, int]:
    """Token counts of every text the host counts for the transcripts' own rows (their wire forms), the
    system prompts and the tool schemas, in the sweep's encoding."""
    counter = ExactCounter(shared.settings.encoding)
    for transcript in shared.transcripts:
        if transcript.system_prompt:
            counter.count_message(wire_message({"role": "system", "content": transcript.system_prompt}))
        for message in transcript.messages:
            counter.count_message(wire_message(message))
        counter.tools(transcript.tools)
    return counter.text_counts()


def _serialize(shared: Shared) -> bytes:
    """The shared inputs as one blob, engines and observers by value (a notebook's classes included)."""
    for spec in shared.engines:
        try:
            cloudpickle.dumps(spec)
        except Exception as error:
            raise ConfigError(
                f"bench: engine {engine_label(spec)!r} cannot be sent to a worker process ({error}); use workers=1"
            ) from error
    try:
        return bytes(cloudpickle.dumps(shared))
    except Exception as error:
        raise ConfigError(f"bench: observers cannot be sent to a worker process ({error}); use workers=1") from error


def _cell_keys(shared: Shared, jobs: list[Job]) -> dict[int, str]:
    from contextlab import __version__

    digests = [transcript_digest(t) for t in shared.transcripts]
    return {job.index: cell_key(shared, job, digests[job.transcript], __version__) for job in jobs}


def _assemble(outcomes: list[Outcome], reused: int) -> BenchResult:
    traces = [o.trace for o in outcomes if len(o.trace)]
    events = [o.compactions for o in outcomes if len(o.compactions)]
    trace = pd.concat(traces, ignore_index=True) if traces else build_frame([], TRACE_COLUMNS)
    compactions = pd.concat(events, ignore_index=True) if events else build_frame([], COMPACTION_COLUMNS)
    return BenchResult(trace, compactions, pd.DataFrame([o.summary for o in outcomes]), reused, _run_frames(outcomes))


def _run_frames(outcomes: list[Outcome]) -> dict[str, pd.DataFrame]:
    """Each frame name of the runs, concatenated in cell order (names in first-seen order)."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for outcome in outcomes:
        for name, frame in outcome.frames.items():
            parts.setdefault(name, []).append(frame)
    out = {}
    for name, frames in parts.items():
        rows = [f for f in frames if len(f)]
        # All empty: one of them keeps the columns (concatenating empty frames is deprecated in pandas).
        out[name] = pd.concat(rows, ignore_index=True) if rows else frames[0].iloc[:0].reset_index(drop=True)
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
