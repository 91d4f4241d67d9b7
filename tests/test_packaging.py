"""The wheel ships every package and the bundled plugins (pyproject lists packages explicitly)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_contextlab_package_is_listed() -> None:
    on_disk = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "contextlab").rglob("__init__.py")}
    listed = {p for p in CONFIG["packages"] if p.startswith("contextlab.") or p == "contextlab"}
    assert on_disk == listed


def test_bundled_plugins_ship_as_contextlab_plugins() -> None:
    assert CONFIG["package-dir"] == {"contextlab_datasets": "datasets", "contextlab_plugins": "plugins"}
    patterns = CONFIG["package-data"]["contextlab_plugins"]
    shipped = {p for pattern in patterns for p in (REPO / "plugins").glob(pattern)}
    needed = {p for p in (REPO / "plugins").rglob("*") if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts}
    assert needed and needed <= shipped


def test_the_wheel_carries_plugins_datasets_and_data(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("contextlab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    datasets = {f"contextlab_datasets/{p.name}" for p in (REPO / "datasets").glob("*.jsonl.gz")}
    plugins = {f"contextlab_plugins/{p.relative_to(REPO / 'plugins')}" for p in (REPO / "plugins").rglob("plugin.yaml")}
    assert datasets and datasets <= names
    assert plugins and plugins <= names
    assert {"contextlab/data/hermes_texts.yaml", "contextlab/cache/prices.yaml", "contextlab/py.typed"} <= names
