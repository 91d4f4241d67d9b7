"""Run a :class:`~contextlab.bench.config.BenchConfig` and write everything a sweep leaves behind.

``<out>/`` receives ``config.yaml`` (first, so an interrupted sweep still says what it was), ``cells/``
(finished cells, for resume), then ``trace``, ``compactions`` and ``summary`` (CSV or Parquet),
``plots/*.png`` and ``report.html``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextlab.bench import BenchResult, bench, collect_transcripts
from contextlab.bench.config import BenchConfig
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings


@dataclass
class SweepOutput:
    """A finished sweep and where its files are."""

    result: BenchResult
    out: Path | None
    files: dict[str, Path]


def settings_from(config: BenchConfig, base: HostSettings | None = None) -> HostSettings:
    """The config's host settings over ``base`` (a bad value is one :class:`ConfigError` line)."""
    try:
        return (base or HostSettings()).with_(**config.settings)
    except ConfigError as error:
        raise ConfigError(f"settings: {error}") from error
    except Exception as error:
        raise ConfigError(f"settings: invalid value ({type(error).__name__}: {error})") from error


def observers_from(config: BenchConfig) -> list[Any]:
    """The cache observers the config names (an unpriced model is an error before anything runs)."""
    from contextlab.cache.observer import priced_observers

    return priced_observers(config.cache, config.cache_policy)


def run_config(
    config: BenchConfig,
    *,
    settings: HostSettings | None = None,
    progress: bool | None = None,
    report: bool = True,
) -> SweepOutput:
    """Run the sweep ``config`` describes; with ``config.out``, write its files there (see module docs)."""
    host = settings_from(config, settings)
    observers = observers_from(config)
    out = Path(config.out) if config.out else None
    if out is not None:
        if out.exists() and not out.is_dir():
            raise ConfigError(f"out {out}: exists and is not a folder")
        out.mkdir(parents=True, exist_ok=True)
        config.save(out)
    transcripts = collect_transcripts(config.transcripts)
    if config.limit is not None:
        transcripts = transcripts[: config.limit]
    result = bench(
        transcripts,
        config.engines or ["passthrough"],
        config.grid,
        settings=host,
        params=config.params,
        observers=observers,
        probes=config.probes,
        workers=config.workers,
        executor=config.executor,
        scheduler=config.scheduler,
        run_timeout=config.run_timeout,
        out=out,
        progress=progress,
    )
    files: dict[str, Path] = {}
    if out is not None:
        files.update(result.write(out, config.format))
        if report:
            from contextlab.report import write_report

            files["report"] = write_report(
                out / "report.html",
                result.trace,
                result.compactions,
                result.summaries,
                title=f"contextlab bench: {out.name}",
                config=config.dump(),
                png_folder=out / "plots",
                frames=result.frames,
            )
    return SweepOutput(result, out, files)
