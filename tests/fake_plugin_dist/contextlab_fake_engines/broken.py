"""An engine whose module fails to import (a missing optional dependency)."""

import contextlab_fake_missing_dependency  # noqa: F401
