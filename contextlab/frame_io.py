"""Writing frames: Parquet with the declared schema (list columns stay lists), or CSV.

Columns :mod:`contextlab.schema` declares get a fixed Arrow type, so every run and sweep writes the same
schema whatever its values (an all-empty ``compress_trigger`` column is still a string column).
Undeclared columns (a sweep's grid values) are typed by Arrow's inference; a column Arrow cannot type is
stored as text. In CSV, list and dict values are written as JSON.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from contextlab import schema
from contextlab.errors import ConfigError

if TYPE_CHECKING:  # pyarrow itself is imported when a Parquet file is written
    import pyarrow as pa

_ARROW_NAMES: dict[schema.DType, str] = {"str": "string", "int": "int64", "float": "float64", "bool": "bool_"}


@cache
def declared_types() -> dict[str, pa.DataType]:
    """Arrow type per declared (non-pattern) column name; a name declared in two frames with two
    types (none today) keeps its first."""
    import pyarrow as pa

    out: dict[str, pa.DataType] = {}
    for column in schema.ALL:
        if not column.is_pattern:
            out.setdefault(column.name, getattr(pa, _ARROW_NAMES[column.dtype])())
    return out


def _declared(name: str, kind: str | None = None) -> pa.DataType | None:
    if kind in schema.FRAMES:  # the frame's own declaration first: a name may differ by frame
        own = schema.find(kind, name)
        if own is not None:
            return _arrow(own.dtype)
    types = declared_types()
    if name in types:
        return types[name]
    for frame in schema.FRAMES:
        found = schema.find(frame, name)
        if found is not None:
            return types.get(found.name) or _arrow(found.dtype)
    return None


def _arrow(dtype: schema.DType) -> pa.DataType:
    import pyarrow as pa

    result: pa.DataType = getattr(pa, _ARROW_NAMES[dtype])()
    return result


def _column(values: pd.Series, declared: pa.DataType | None) -> pa.Array:
    import pyarrow as pa

    if declared is not None:
        try:
            return pa.array(values, type=declared, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            pass  # an observer reused the name with other values: let Arrow type it
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return pa.array([None if _missing(v) else str(v) for v in values], type=pa.string())


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def arrow_table(frame: pd.DataFrame, kind: str | None = None) -> pa.Table:
    """``frame`` as an Arrow table with the declared types (lists stay lists). ``kind`` names the frame
    (``"summary"``: its ``select_context_used`` is a count, the trace's a flag); without it a name takes
    the type of its first declaration."""
    import pyarrow as pa

    arrays = [_column(frame[name], _declared(str(name), kind)) for name in frame.columns]
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


def write_frame(frame: pd.DataFrame, path: str | Path, kind: str | None = None) -> Path:
    """Write ``.parquet`` (declared schema; ``kind`` as in :func:`arrow_table`) or ``.csv`` atomically
    (a temporary file renamed into place)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ConfigError(f"{path}: unsupported output type {suffix or '(none)'}; use .csv or .parquet")
    if not path.parent.exists():
        raise ConfigError(f"{path}: folder {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".csv":
        csv_ready(frame).to_csv(tmp, index=False)
    else:
        import pyarrow.parquet as pq

        pq.write_table(arrow_table(frame, kind), tmp)
    tmp.replace(path)
    return path
