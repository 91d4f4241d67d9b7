"""The wheel ships every package and the bundled plugins (pyproject lists packages explicitly)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_contextlab_package_is_listed() -> None:
    on_disk = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "contextlab").rglob("__init__.py")}
    listed = {p for p in CONFIG["packages"] if p.startswith("contextlab.") or p == "contextlab"}
    assert on_disk == listed


def test_bundled_plugins_ship_as_contextlab_plugins() -> None:
    assert CONFIG["package-dir"] == {"contextlab_plugins": "plugins"}
    patterns = CONFIG["package-data"]["contextlab_plugins"]
    shipped = {p for pattern in patterns for p in (REPO / "plugins").glob(pattern)}
    needed = {p for p in (REPO / "plugins").rglob("*") if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts}
    assert needed and needed <= shipped
