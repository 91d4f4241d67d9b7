"""pytest plugin (entry point ``pytest11``): the ``engine_conformance`` fixture for engine authors.

Imports nothing heavy at collection time; contextlab loads when the fixture is first used.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def engine_conformance() -> Any:
    """``check(engine, params=None, **options) -> ConformanceReport``; call ``.assert_ok()`` on it."""
    from contextlab.testing import check_engine

    return check_engine
