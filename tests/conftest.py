"""Shared fixtures: where the real transcripts live, and small message builders."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from contextlab.measure.target_store import ENV_DIRECTORY as TARGET_STORE

REPO = Path(__file__).resolve().parent.parent
SHARED_TRANSCRIPTS = Path(os.environ.get("CONTEXTLAB_TRANSCRIPTS", REPO.parent / "shared" / "transcripts"))

# Probe targets are kept on disk between processes (contextlab.measure.target_store). The suite, and
# the commands it starts, use a store of their own: a run neither reads nor fills the user's cache,
# and replays after the first of a transcript read their targets back, as a user's second run does.
if TARGET_STORE not in os.environ:
    _STORE = tempfile.mkdtemp(prefix="contextlab-targets-")
    os.environ[TARGET_STORE] = _STORE
    atexit.register(shutil.rmtree, _STORE, True)


@pytest.fixture(scope="session")
def shared_transcripts() -> Path:
    """``../shared/transcripts`` (or ``$CONTEXTLAB_TRANSCRIPTS``); CI always has it."""
    if not SHARED_TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_TRANSCRIPTS}")
    return SHARED_TRANSCRIPTS


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
