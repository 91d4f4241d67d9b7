"""The host's texts (summary prefixes, markers, wrappers, notes), loaded from ``data/hermes_texts.yaml``.

Shared by the built-in compressor and the host loop (which recognises handoffs and continuation
markers when it checks that a compaction kept a real user turn).

The bytes come from upstream, one entry per text with the repository, commit, path and symbol it was
read from (see ``docs/compressor.md``). They are tokens in every later request, so code never
re-types them: everything reads this module.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from contextlab.errors import ConfigError

DATA_FILE = "hermes_texts.yaml"


@cache
def _data() -> dict[str, Any]:
    raw = resources.files("contextlab").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    data = yaml.safe_load(raw)
    if not isinstance(data, dict) or not isinstance(data.get("texts"), dict):
        raise ConfigError(f"contextlab/data/{DATA_FILE}: expected a mapping with a 'texts' section")
    return data


def parsed_file() -> dict[str, Any]:
    """The whole parsed file (parsed once per process; do not mutate)."""
    return _data()


def text(key: str) -> str:
    """One host text by key (e.g. ``"summary_prefix"``)."""
    entry = _data()["texts"].get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
        raise ConfigError(f"contextlab/data/{DATA_FILE}: texts.{key}.text is missing")
    return str(entry["text"])


def historical_prefixes() -> tuple[str, ...]:
    """Every older summary prefix, newest first, as the host recognises them on reload."""
    return tuple(str(e["text"]) for e in _data().get("historical_summary_prefixes", []))


SUMMARY_PREFIX = text("summary_prefix")
LEGACY_SUMMARY_PREFIX = text("legacy_summary_prefix")
HISTORICAL_PREFIXES = historical_prefixes()
ALL_PREFIXES: tuple[str, ...] = (SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX, *HISTORICAL_PREFIXES)
"""In the host's match order: current, legacy, then the historical ones newest first."""
END_MARKER = text("summary_end_marker")
PRIOR_HEADER = text("merged_prior_context_header")
PRIOR_DELIMITER = text("merged_summary_delimiter")
SYSTEM_NOTE = text("system_prompt_note")
NO_USER_SENTINEL = text("no_user_task_sentinel")
CONTINUATION_USER = (text("continuation_user_content"), text("legacy_continuation_user_content"))
"""The host's continuation markers (current first): a user turn when no human one survived."""
MAX_ITERATIONS_REQUEST = text("max_iterations_summary_request")
DUPLICATE_OUTPUT = text("duplicate_tool_output")
PRUNED_PLACEHOLDER = text("pruned_tool_placeholder")
SCREENSHOT_REMOVED = text("screenshot_removed")
IMAGE_STRIPPED = text("attached_image_stripped")
TOOL_CALL_REMOVED = text("tool_call_removed")
ARG_TRUNCATED = text("arg_truncated_suffix")
SKILL_PRUNED = text("skill_pruned_marker")
INFLIGHT_HEADER = text("inflight_task_header")
SUMMARY_KEY = "_compressed_summary"
"""The host's metadata flag on a row that carries a compaction summary (standalone or merged into it)."""


def classify_summary_content(text: str) -> str | None:
    """``"standalone"`` (the text opens with a summary prefix of any generation), ``"merged"`` (a
    prefix follows the merged-context delimiter) or None, as upstream ``classify_summary_content``."""
    body = text.lstrip()
    if PRIOR_DELIMITER in body:
        after = body.split(PRIOR_DELIMITER, 1)[1].lstrip()
        return "merged" if after.startswith(ALL_PREFIXES) else None
    return "standalone" if body.startswith(ALL_PREFIXES) else None
