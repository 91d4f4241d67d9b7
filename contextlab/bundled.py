"""Folders that ship with contextlab as data packages, found through the import system.

The bundled plugins (``plugins/`` in a checkout) and the generated datasets (``datasets/``) are
installed as the data-only packages ``contextlab_plugins`` and ``contextlab_datasets`` (see
``package-dir`` in ``pyproject.toml``). Looking them up by package name works the same in a wheel,
an editable install and a zipped site-packages, so library code never guesses a repository path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

PLUGINS_PACKAGE = "contextlab_plugins"
DATASETS_PACKAGE = "contextlab_datasets"


def package_folder(package: str, child: str = "") -> Path | None:
    """The first folder of ``package`` (joined with ``child``) that exists on disk, else None."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / child if child else Path(location)
        if folder.is_dir():
            return folder
    return None
