"""Fixtures for engine tests: the OpenAI-compatible stub server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import llm_stub


@pytest.fixture
def stub() -> Iterator[llm_stub.StubServer]:
    server, thread = llm_stub.start()
    try:
        yield server
    finally:
        llm_stub.stop(server, thread)
