"""Secret redaction applied to everything a summary quotes (the host redacts each message it summarises)."""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), "sk-[REDACTED]"),
    (re.compile(r"\b(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}"), "[REDACTED_GITHUB_TOKEN]"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "[REDACTED_AWS_KEY]"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "[REDACTED_SLACK_TOKEN]"),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}"), r"\1 [REDACTED]"),
    (
        re.compile(
            r"(?i)\b(api[_-]?key|secret|password|passwd|token|access[_-]?key)(\s*[:=]\s*)(['\"]?)[^\s'\",;]{6,}"
        ),
        r"\1\2\3[REDACTED]",
    ),
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
        "[REDACTED_PRIVATE_KEY]",
    ),
)


_HINTS = (
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "akia",
    "xox",
    "bearer",
    "api_key",
    "api-key",
    "apikey",
    "secret",
    "passw",
    "token",
    "access_key",
    "access-key",
    "accesskey",
    "private key",
)
"""Lowercase substrings one of which every secret pattern needs; checked at C speed before any regex."""


_NEEDS: tuple[tuple[str, ...], ...] = (
    ("sk-",),
    ("ghp_", "gho_", "ghs_", "ghu_", "github_pat_"),
    ("AKIA",),
    ("xox",),
    (),
    (),
    ("-----BEGIN ",),
)
"""Per pattern, case-sensitive literals one of which any match contains (empty: always run). A
pattern whose literals are absent from the text cannot match it, so its regex pass (a slow scan:
the leading ``\\b`` defeats the literal-prefix search) is skipped with the same result."""


def redact(text: str) -> str:
    """``text`` with API keys, tokens, passwords and private keys replaced by fixed markers."""
    if not text:
        return text
    lowered = text.lower()
    if not any(hint in lowered for hint in _HINTS):
        return text
    for (pattern, replacement), needs in zip(_PATTERNS, _NEEDS, strict=True):
        if needs and not any(needle in text for needle in needs):
            continue
        text = pattern.sub(replacement, text)
    return text
