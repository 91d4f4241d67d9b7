"""Reading a YAML file with one error line naming the file, the line and the problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from contextlab.errors import ConfigError


def read_yaml(path: str | Path, *, error: Callable[[str], Exception] = ConfigError) -> Any:
    """The parsed content of ``path`` (``None`` for an empty file; a UTF-8 byte-order mark is allowed).

    Raises:
        ``error``: ``<path>: cannot read: <reason>`` or ``<path>:<line>: invalid YAML: <problem>``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as problem:
        raise error(f"{path}: cannot read: {problem.strerror or problem}") from None
    except UnicodeDecodeError as problem:
        raise error(f"{path}: not UTF-8 text ({problem.reason} at byte {problem.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as problem:
        raise error(yaml_error_message(path, problem)) from None


def yaml_error_message(source: str | Path, problem: yaml.YAMLError) -> str:
    """``<source>:<line>: invalid YAML: <problem>`` (the line when the parser knows it)."""
    mark = getattr(problem, "problem_mark", None)
    where = f":{mark.line + 1}" if mark is not None else ""
    return f"{source}{where}: invalid YAML: {getattr(problem, 'problem', None) or problem}"
