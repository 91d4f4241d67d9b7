"""Lean tail mode (opt-in ``tail_mode="lean"``; read from the fork ``zpthree/hermes-agent@a279de39``,
not in ``NousResearch/hermes-agent@0000416b``): stale tail tool results become recovery stubs, and
every summary gets three deterministic sections appended: an anchor index of exact identifiers, the
compacted user messages verbatim, and a session-history recovery pointer (the fork's
``_demote_stale_tail_tools``, ``_augment_summary_lean``; see ``docs/compressor.md``)."""

from __future__ import annotations

import re

from contextlab import hermes_texts as texts
from contextlab.engine import Message
from contextlab.engines.compressor.tool_summary import is_stub
from contextlab.messages import content_text
from contextlab.redact import redact

KEEP_TOOL_ROUNDS = 6
DEMOTE_MIN_CHARS = 1_500
USER_BUDGET_CHARS = 24_000
USER_MAX_CHARS = 4_000
ANCHOR_BUDGET_CHARS = 7_000
ANCHOR_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    ("PRs/issues", re.compile(r"#\d{3,6}\b"), 120),
    ("commits", re.compile(r"\b[0-9a-f]{9,40}\b"), 40),
    ("branches", re.compile(r"\b(?:fix|feat|docs|refactor|chore|salvage|ent)/[A-Za-z0-9._/-]{3,60}"), 40),
    ("files", re.compile(r"\b[\w./-]+/[\w.-]+\.(?:py|ts|tsx|js|rs|md|yaml|yml|json|toml|sh)\b"), 80),
    ("errors", re.compile(r"\b(?:[A-Z][a-zA-Z]*Error|Exception|ENOSPC|EACCES|SIGKILL|Traceback)\b[^\n]{0,90}"), 40),
    ("handles", re.compile(r"@[A-Za-z0-9-]{3,30}\b"), 40),
    ("urls", re.compile(r"https?://[^\s)\"']{10,110}"), 30),
]
ANCHOR_NOISE = frozenset({"@teknium", "@teknium1"})
SYNTHETIC_USER_PREFIXES = (
    "[System:",
    "[CONTEXT",
    "[PRIOR CONTEXT",
    "[IMPORTANT: Background",
    "[Your active task list",
    "[Planning state preserved",
    "[ASYNC DELEGATION",
    "[OUT-OF-BAND",
    "Cronjob Response:",
)


def demote_stale_tail_tools(messages: list[Message], tail_start: int, session_id: str = "") -> list[Message]:
    """Tail tool results older than the newest 6 tool rounds (and ≥ 1,500 chars) become one-line stubs."""
    protected: set[int] = set()
    rounds = 0
    previous: int | None = None
    for i in range(len(messages) - 1, tail_start - 1, -1):
        if messages[i].get("role") != "tool":
            continue
        rounds += previous is None or previous - i > 1
        previous = i
        if rounds > KEEP_TOOL_ROUNDS:
            break
        protected.add(i)
    hint = texts.text("lean_stub_hint").format(session_id=session_id) if session_id else ""
    out = list(messages)
    for i in range(tail_start, len(messages)):
        message = messages[i]
        content = message.get("content")
        if message.get("role") != "tool" or i in protected or not isinstance(content, str):
            continue
        if len(content) < DEMOTE_MIN_CHARS or "[SKILL_PRUNED:" in content or is_stub(content):
            continue
        stub = texts.text("lean_stub").format(tool=message.get("tool_name") or "tool", chars=len(content), hint=hint)
        out[i] = {**{k: v for k, v in message.items() if k != "api_content"}, "content": stub}
    return out


def anchor_index(turns: list[Message]) -> str:
    """Exact identifiers harvested by regex from the compacted region, most frequent first."""
    text = "\n".join(c for c in (m.get("content") for m in turns) if isinstance(c, str) and c)
    if not text:
        return ""
    lines: list[str] = []
    used = 0
    for label, pattern, cap in ANCHOR_PATTERNS:
        counts: dict[str, int] = {}
        last_seen: dict[str, int] = {}
        for n, match in enumerate(pattern.finditer(text)):
            value = match.group(0).strip().rstrip(".,;:")
            if value.lower() in ANCHOR_NOISE:
                continue
            counts[value] = counts.get(value, 0) + 1
            last_seen[value] = n
        if not counts:
            continue
        ranked = sorted(counts, key=lambda v: (-counts[v], -last_seen[v]))[:cap]
        line = f"{label}: " + ", ".join(f"{v}(x{counts[v]})" if counts[v] > 1 else v for v in ranked)
        if used + len(line) > ANCHOR_BUDGET_CHARS:
            break
        lines.append(line)
        used += len(line)
    if not lines:
        return ""
    return "\n\n" + texts.text("lean_anchor_heading") + "\n" + "\n".join(lines) + texts.text("lean_anchor_footer")


def verbatim_users(turns: list[Message]) -> str:
    """The compacted region's real user messages, newest first, quoted, under a character budget."""
    quoted: list[str] = []
    used = 0
    for message in reversed(turns):
        if message.get("role") != "user":
            continue
        content = content_text(message)
        if not content.strip() or content.lstrip().startswith(SYNTHETIC_USER_PREFIXES):
            continue
        remaining = USER_BUDGET_CHARS - used
        if remaining <= 0:
            break
        body = content.strip()
        if len(body) > USER_MAX_CHARS:
            body = body[:USER_MAX_CHARS].rstrip() + " …[truncated]"
        if len(body) > remaining:
            body = body[:remaining].rstrip() + " …[truncated]"
        quoted.append("> " + body.replace("\n", "\n> "))
        used += len(body)
    if not quoted:
        return ""
    return "\n\n" + texts.text("lean_user_heading") + "\n" + "\n\n".join(quoted) + texts.text("lean_user_footer")


def recovery_footer(session_id: str, region_len: int) -> str:
    """A pointer to the compacted region in session history (only with a session id)."""
    if not session_id:
        return ""
    body = texts.text("lean_recovery_body").format(count=region_len, session_id=session_id)
    return "\n\n" + texts.text("lean_recovery_heading") + "\n" + body


def augment(summary: str, turns: list[Message], session_id: str) -> str:
    """Append the three lean sections that the summary does not already carry."""
    if texts.text("lean_anchor_heading") not in summary:
        summary += redact(anchor_index(turns))
    if texts.text("lean_user_heading") not in summary:
        summary += redact(verbatim_users(turns))
    if texts.text("lean_recovery_heading") not in summary:
        summary += recovery_footer(session_id, len(turns))
    return summary
