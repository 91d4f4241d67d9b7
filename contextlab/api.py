"""The Python entry points: replay one engine, compare several."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.engine import ContextEngine, is_engine
from contextlab.engines import EngineSpec, engine_label
from contextlab.host.observers import RequestObserver
from contextlab.host.replay import run_replay
from contextlab.host.settings import HostSettings
from contextlab.host.trace import ReplayResult
from contextlab.plugins import resolve_engine
from contextlab.probes import default_observers
from contextlab.tokens import ExactCounter
from contextlab.transcripts import Transcript, load_transcript


def replay(
    transcript: Transcript | str | Path,
    engine: EngineSpec = "passthrough",
    settings: HostSettings | None = None,
    *,
    params: Mapping[str, Any] | None = None,
    observers: Iterable[RequestObserver] = (),
    probes: bool = True,
    counter: ExactCounter | None = None,
    **setting_overrides: Any,
) -> ReplayResult:
    """Replay a transcript through an engine on the simulated host.

    Args:
        transcript: A :class:`Transcript` or a path to any supported transcript file.
        engine: An engine name, a ``ContextEngine`` subclass, or an instance (cloned per run).
        settings: Host settings; keyword overrides (``context_length=128_000``) are applied on top.
        params: Engine constructor parameters (names and classes only).
        observers: Measurement models adding trace columns (prompt cache, probes).
        probes: Add the measurement probe (retention, losses, diffs, break attribution; docs/metrics.md).
        counter: A shared exact counter (lets sweeps reuse one tokenizer memo).

    Returns:
        The trace, compaction events and run summary. A failing engine gives ``status="failed"``.
    """
    if not isinstance(transcript, Transcript):
        transcript = load_transcript(transcript)
    settings = (
        (settings or HostSettings()).with_(**setting_overrides) if setting_overrides else (settings or HostSettings())
    )
    instance = follow_host_version(resolve_engine(engine, params), engine, params, settings.hermes_version)
    label = engine_label(engine)  # the label a failed run of this spec gets too
    observers = list(observers)
    if probes:
        observers += default_observers(transcript, observers, max_attempts=settings.attempts_per_turn)
    return run_replay(
        transcript,
        instance,
        settings,
        engine_label=label,
        params_label=params_label(settings, params),
        observers=observers,
        counter=counter,
    )


def follow_host_version(
    instance: ContextEngine, spec: EngineSpec, params: Mapping[str, Any] | None, version: str
) -> ContextEngine:
    """``instance``, or the compressor port built again under the rules of the host version the
    replay follows (``HostSettings.hermes_version``), so one switch models a whole host release.
    Parameters that name ``hermes_rules`` win, and a given instance is kept as it is."""
    rules = getattr(instance, "hermes_rules", None)
    if rules is None or rules == version or is_engine(spec) or "hermes_rules" in (params or {}):
        return instance
    return resolve_engine(spec, {**(params or {}), "hermes_rules": version})


def compare(
    transcript: Transcript | str | Path,
    engines: Sequence[EngineSpec],
    settings: HostSettings | None = None,
    **setting_overrides: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay one transcript through several engines; returns (long trace, one summary row per engine)."""
    if not isinstance(transcript, Transcript):
        transcript = load_transcript(transcript)
    settings = settings or HostSettings()
    counter = ExactCounter(settings.encoding)
    results = [replay(transcript, e, settings, counter=counter, **setting_overrides) for e in engines]
    traces = pd.concat([r.trace for r in results], ignore_index=True)
    summaries = pd.DataFrame([r.summary for r in results])
    return traces, summaries


def params_label(settings: HostSettings, params: Mapping[str, Any] | None) -> str:
    """A stable, hashable id for a run's parameters (host settings that vary, then engine params)."""
    parts = [settings.label()]
    given = dict(params or {})
    parts += [f"{k}={given[k]!r}" for k in sorted(given)]
    return ",".join(parts)
