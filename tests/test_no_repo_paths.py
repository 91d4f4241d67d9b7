"""Library code finds its data by package name, never by where the repository or workspace happens to be."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "contextlab"


def test_no_module_locates_files_from_its_own_path() -> None:
    offenders = []
    for source in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "__file__":
                offenders.append(f"{source.relative_to(PACKAGE.parent)}:{node.lineno}: __file__")
            docstring_free = isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" not in node.value
            if docstring_free and ("../shared" in node.value or "shared/transcripts" in node.value):
                offenders.append(f"{source.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}")
    assert offenders == [], "use contextlab.bundled / importlib.resources instead:\n" + "\n".join(offenders)
