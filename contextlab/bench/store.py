"""Finished sweep cells on disk, so a re-run into the same folder skips them (resume).

Each cell is one file ``<out>/cells/<key>.pkl`` written to a temporary name and renamed into place,
so an interrupted sweep (Ctrl-C, a killed machine) leaves only whole cells behind. The key covers
everything that decides a cell's result (see :func:`contextlab.bench.cells.cell_key`), including the
contextlab version, so a cell is never reused for other inputs. Failed cells are not stored: a re-run
tries them again.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from contextlab.bench.cells import Outcome

CELL_FOLDER = "cells"


class CellStore:
    """Finished cells of one output folder."""

    def __init__(self, out: str | Path) -> None:
        self.folder = Path(out) / CELL_FOLDER

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pkl"

    def load(self, key: str) -> Outcome | None:
        """The stored outcome of cell ``key``, or None (also for an unreadable file, which is re-run)."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            with path.open("rb") as handle:
                outcome = pickle.load(handle)
        except Exception:
            return None
        # A cell stored before outcomes carried their frames is re-run, so every run has them.
        return outcome if isinstance(outcome, Outcome) and hasattr(outcome, "frames") else None

    def save(self, key: str, outcome: Outcome) -> None:
        """Store a finished cell atomically (only ``ok`` cells: failures are retried next time)."""
        if outcome.summary.get("status") != "ok":
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as handle:
            pickle.dump(outcome, handle, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
