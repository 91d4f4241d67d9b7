"""Shared fixtures: where the real transcripts live, and small message builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_TRANSCRIPTS = Path(os.environ.get("CONTEXTLAB_TRANSCRIPTS", REPO.parent / "shared" / "transcripts"))


@pytest.fixture(scope="session")
def shared_transcripts() -> Path:
    """``../shared/transcripts`` (or ``$CONTEXTLAB_TRANSCRIPTS``); CI always has it."""
    if not SHARED_TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_TRANSCRIPTS}")
    return SHARED_TRANSCRIPTS


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
