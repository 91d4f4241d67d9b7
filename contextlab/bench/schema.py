"""How sweep frames are stored: Parquet with the declared schema (list columns stay lists), or CSV.

One writer serves single replays and sweeps alike: :mod:`contextlab.frame_io`, with the column types of
:mod:`contextlab.schema`. The names here are the sweep's view of it.
"""

from __future__ import annotations

from contextlab.frame_io import arrow_table, csv_ready, declared_types
from contextlab.frame_io import write_frame as write_table

__all__ = ["arrow_table", "csv_ready", "declared_types", "write_table"]
