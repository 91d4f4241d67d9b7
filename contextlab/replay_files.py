"""Everything one replay leaves behind, as files next to its trace (``contextlab replay --out``).

``--out run.parquet`` writes the trace to ``run.parquet`` and every other frame of the run beside
it as ``run.<frame>.parquet`` (same format): ``compactions`` (the compaction events), ``breaks``
(prefix breaks by cause, :func:`contextlab.measure.break_table`), then each frame of
``ReplayResult.frames`` by name (``probes``, ``compaction_diff``, ``compaction_items``,
``faithfulness``; ``docs/metrics.md``). Each file is written to a temporary name and renamed into
place, and the trace last: a trace on disk means its sibling frames are complete.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from contextlab.frame_io import write_frame as write_table
from contextlab.host.trace import ReplayResult


def frame_path(out: Path, name: str) -> Path:
    """Where frame ``name`` of a replay written to ``out`` goes: ``<stem>.<name><suffix>``."""
    return out.with_name(f"{out.stem}.{name}{out.suffix}")


def replay_frames(result: ReplayResult) -> dict[str, pd.DataFrame]:
    """The run's frames besides the trace, by file name: compactions, breaks, then ``result.frames``."""
    frames: dict[str, pd.DataFrame] = {"compactions": result.compactions}
    if "break_cause" in result.trace.columns:
        from contextlab.measure import break_table

        frames["breaks"] = break_table(result.trace)
    frames.update(result.frames)
    return frames


def write_replay(result: ReplayResult, out: str | Path) -> dict[str, Path]:
    """Write every frame of ``result`` next to ``out`` (see module docs), then the trace to ``out``."""
    out = Path(out)
    written = {name: write_table(frame, frame_path(out, name), name) for name, frame in replay_frames(result).items()}
    written["trace"] = result.write(out)
    return written
