"""The measurement layer: what an engine forgot, what it costs, and why (``docs/metrics.md``).

:class:`MeasureProbe` is the request observer every replay gets; :func:`engine_diagnostics` and
:func:`break_table` work on saved frames; :func:`targets_for` exposes the extracted (and, for
transcripts without gold facts, mined) probe targets.
"""

from __future__ import annotations

from contextlab.measure.breaks import attribute_breaks, break_table, price_of
from contextlab.measure.diagnostics import engine_diagnostics
from contextlab.measure.probe import MEASURE_COLUMNS, MeasureProbe
from contextlab.measure.recovery import RecoveryOracle, fact_key
from contextlab.measure.targets import Target, TargetSet, targets_for

__all__ = [
    "MEASURE_COLUMNS",
    "MeasureProbe",
    "RecoveryOracle",
    "Target",
    "TargetSet",
    "attribute_breaks",
    "break_table",
    "engine_diagnostics",
    "fact_key",
    "price_of",
    "targets_for",
]
