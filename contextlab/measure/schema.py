"""Column types of the measurement frames (``probes``, ``compaction_diff``, ``compaction_items``,
``faithfulness``), so a sweep or a replay writes them with the same Parquet schema every time."""

from __future__ import annotations

import pyarrow as pa

from contextlab.measure.probe import DIFF_COLUMNS, ITEM_COLUMNS

MEASURE_FRAMES: tuple[str, ...] = ("probes", "compaction_diff", "compaction_items", "faithfulness")
"""The frames :class:`~contextlab.measure.MeasureProbe` adds to ``ReplayResult.frames``, in file order."""

_STRINGS = ("kind", "dimension", "group", "key", "text", "category", "origin", "finding")
_BOOLS = ("needed_later",)

MEASURE_DECLARED: dict[str, pa.DataType] = {
    **{name: pa.string() for name in _STRINGS},
    **{name: pa.bool_() for name in _BOOLS},
    **{
        name: pa.int64()
        for name in ("eligible", "in_context", "recoverable", *DIFF_COLUMNS, *ITEM_COLUMNS)
        if name not in (*_STRINGS, *_BOOLS, "outcome")
    },
}
"""Arrow types of the measurement frames' columns (``outcome`` and the identity columns are
declared with the trace's)."""
