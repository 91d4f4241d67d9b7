"""The host's texts (summary prefixes, markers, wrappers, notes), loaded from ``data/hermes_texts.yaml``.

Shared by the built-in compressor and the host loop (which recognises handoffs and continuation
markers when it checks that a compaction kept a real user turn).

The bytes come from upstream, one entry per text with the repository, commit, path and symbol it was
read from (see ``docs/compressor.md``). They are tokens in every later request, so code never
re-types them: everything reads this module.
"""

from __future__ import annotations

from collections.abc import Mapping
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
TODO_HEADER = text("todo_injection_header")
"""The first line of the todo snapshot the host re-injects as a user row after a compaction."""
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


# Rows the runtime writes as user turns (upstream ``agent/conversation_compression.py``; the host's
# user-turn guard and the compressor's in-flight restatement both ask whether a row is the user's own)

SYNTHETIC_FLAGS = (
    "_todo_snapshot_synthetic",
    "_empty_recovery_synthetic",
    "_verification_stop_synthetic",
    "_pre_verify_synthetic",
    "_dropped_toolcall_nudge",
)
"""Metadata keys of user-role rows the runtime writes (todo snapshots, recovery nudges)."""
SYNTHETIC_PREFIXES = (
    "[System: Your previous response was truncated",
    "[System: The previous response was cut off",
    "[System: Your previous tool call",
    TODO_HEADER,
    "[IMPORTANT: Background process ",
)
"""Openings of user-role rows the runtime writes (upstream ``_SYNTHETIC_USER_PREFIXES``)."""
RUNTIME_USER_TEXTS = frozenset((*CONTINUATION_USER, MAX_ITERATIONS_REQUEST))
"""Whole texts of user-role rows the host writes itself: the continuation markers, the request for a
final answer at the iteration cap."""


def is_real_user_message(message: Mapping[str, Any]) -> bool:
    """A user-role row with the user's own words: not runtime scaffolding (flagged or by its opening),
    not blank, not a compaction summary (by metadata or content, standalone or merged), not a host
    marker."""
    if message.get("role") != "user" or message.get(SUMMARY_KEY):
        return False
    if any(message.get(flag) for flag in SYNTHETIC_FLAGS):
        return False
    text = row_text(message).strip()
    if not text or text.startswith(SYNTHETIC_PREFIXES) or text in RUNTIME_USER_TEXTS:
        return False
    return classify_summary_content(text) is None


def row_text(message: Mapping[str, Any]) -> str:
    """The row's text as upstream's guard reads it: a string, or the text of its dict parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or p.get("content") or "") for p in content if isinstance(p, dict))
    return ""
