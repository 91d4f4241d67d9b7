"""How sweep frames are stored: Parquet with a declared schema (list columns stay lists), or CSV.

Columns this module knows get a fixed Arrow type, so every sweep writes the same schema whatever its
values (an all-empty ``compress_trigger`` column is still a string column). Columns added by other
observers are typed by Arrow's inference; a column Arrow cannot type is stored as text. In CSV, list
and dict values are written as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from contextlab.errors import ConfigError
from contextlab.measure.schema import MEASURE_DECLARED

_STR, _INT, _FLOAT, _BOOL = pa.string(), pa.int64(), pa.float64(), pa.bool_()

DECLARED: dict[str, pa.DataType] = {
    # identity
    "transcript": _STR,
    "engine": _STR,
    "params": _STR,
    "model": _STR,
    "status": _STR,
    "error": _STR,
    "phase": _STR,
    "trigger": _STR,
    "focus_topic": _STR,
    "outcome": _STR,
    "reason": _STR,
    "compress_trigger": _STR,
    "violation_rules": _STR,
    "select_context_rejected": _STR,
    # counts
    **{
        name: _INT
        for name in (
            "turn",
            "request",
            "n_messages",
            "prompt_tokens",
            "prompt_tokens_rough",
            "pressure_tokens",
            "completion_tokens",
            "threshold_tokens",
            "context_length",
            "compression_count",
            "prefix_tokens",
            "prefix_messages",
            "violations",
            "tokens_before",
            "tokens_after",
            "messages_before",
            "messages_after",
            "summary_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "uncached_tokens",
            "facts_eligible",
            "facts_in_context",
            "requests",
            "turns",
            "compactions",
            "compaction_attempts",
            "prunes",
            "prompt_tokens_total",
            "prompt_tokens_max",
            "prefix_breaks",
            "overflows",
            "invalid_results",
        )
    },
    # shares, costs, times
    **{
        name: _FLOAT
        for name in (
            "timestamp",
            "engine_ms",
            "duration_ms",
            "wall_s",
            "engine_ms_total",
            "cost_usd",
            "cache_hit_rate",
            "prefix_share",
            "fact_retention",
            "fact_retention_mean",
            "fact_retention_final",
            "prompt_tokens_mean",
        )
    },
    # flags
    **{name: _BOOL for name in ("over_threshold", "compressed", "pruned", "select_context_used", "overflow")},
}
"""Arrow types of the columns contextlab itself writes."""
DECLARED.update({k: v for k, v in MEASURE_DECLARED.items() if k not in DECLARED})  # probes, diffs (docs/metrics.md)


def _column(values: pd.Series, declared: pa.DataType | None) -> pa.Array:
    if declared is not None:
        try:
            return pa.array(values, type=declared, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            pass  # an observer reused the name with other values: let Arrow type it
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return pa.array([None if _missing(v) else str(v) for v in values], type=_STR)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def arrow_table(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table with the declared types (lists stay lists)."""
    arrays = [_column(frame[name], DECLARED.get(str(name))) for name in frame.columns]
    return pa.Table.from_arrays(arrays, names=[str(name) for name in frame.columns])


def csv_ready(frame: pd.DataFrame) -> pd.DataFrame:
    """List and dict values as JSON text, so a CSV cell holds something a reader can parse back."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object and out[column].map(lambda v: isinstance(v, list | dict | tuple)).any():
            out[column] = out[column].map(
                lambda v: json.dumps(v, default=str) if isinstance(v, list | dict | tuple) else v
            )
    return out


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``.parquet`` (declared schema) or ``.csv`` atomically (a temporary file renamed into place)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ConfigError(f"{path}: unsupported output type {suffix or '(none)'}; use .csv or .parquet")
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".csv":
        csv_ready(frame).to_csv(tmp, index=False)
    else:
        pq.write_table(arrow_table(frame), tmp)
    tmp.replace(path)
    return path
