"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl`` and subagent logs).

One JSON object per line. ``user`` and ``assistant`` lines carry an Anthropic Messages API message;
one API response is often split over several consecutive ``assistant`` lines sharing ``message.id``
(tool results of its first calls may already arrive between them): they are merged into one
assistant message, its tool results placed right after it, and user text that arrived meanwhile
after those. A user line carrying only tool results is not a new user turn. ``system`` lines with
``subtype: compact_boundary`` become :class:`CompactionEvent` entries (the summary is the user line
that follows); other system lines, ``progress``, ``file-history-snapshot`` and ``queue-operation``
lines are display-only and skipped (counted in ``metadata["skipped_lines"]``). Side-chain lines are
skipped in a main session; a subagent log (every line a side chain) is loaded as it is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.messages import content_text
from contextlab.transcripts.anthropic_blocks import AssistantDraft, usage_from_anthropic, user_messages
from contextlab.transcripts.io import counts_at
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import COMPACT_SUMMARY_KIND, CompactionEvent, RecordedUsage, Transcript

LINE_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "file-history-snapshot", "queue-operation", "summary"}
)
MESSAGE_TYPES = frozenset({"user", "assistant"})
SYNTHETIC_MODEL = "<synthetic>"
META_KIND = "meta"

# User rows Claude Code writes itself (not isMeta in its logs), by how their text starts.
_HARNESS_PREFIXES: tuple[tuple[str, str], ...] = (
    ("[Request interrupted by user", "interrupt"),
    ("<task-notification>", "task_notification"),
    ("<command-name>", "command"),
    ("<command-message>", "command"),
    ("<local-command-stdout>", "command_output"),
    ("<local-command-stderr>", "command_output"),
    ("<local-command-caveat>", "meta"),
)


def harness_kind(text: str) -> str | None:
    """The ``display_kind`` of a user row Claude Code wrote itself (see ``HARNESS_KINDS``), else None."""
    head = text.lstrip()
    for prefix, kind in _HARNESS_PREFIXES:
        if head.startswith(prefix):
            return kind
    return None


def looks_like(rows: list[tuple[int, Any]]) -> bool:
    """Claude Code when the first object lines have a known ``type`` and a session field."""
    for _, row in rows[:5]:
        if not isinstance(row, dict) or not isinstance(row.get("type"), str) or row["type"] not in LINE_TYPES:
            return False
        if "sessionId" in row or "uuid" in row or "messageId" in row or "leafUuid" in row:
            return True
    return False


@dataclass
class _Response:
    """An assistant response still receiving lines, with what arrived after it."""

    message_id: str | None
    draft: AssistantDraft
    line: int
    timestamp: float | None
    usage: RecordedUsage | None
    model: str | None
    tools: list[tuple[Message, float | None]] = field(default_factory=list)
    after: list[tuple[Message, float | None]] = field(default_factory=list)


class _Builder:
    """Turns the lines of one log into a :class:`Transcript` (one pass, nothing quadratic)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.source = str(path)
        self.log = ImportLog(self.source)
        self.messages: list[Message] = []
        self.usage: dict[int, RecordedUsage] = {}
        self.timestamps: dict[int, float] = {}
        self.models: dict[int, str] = {}
        self.events: list[CompactionEvent] = []
        self.skipped: Counter[str] = Counter()
        self.open: _Response | None = None
        self.boundary: tuple[int, dict[str, Any]] | None = None  # compact_boundary awaiting its summary
        self.known_calls: set[str] = set()
        self.meta: dict[str, Any] = {}

    # ------------------------------------------------------------------ lines

    def feed(self, number: int, row: Any, keep_sidechain: bool) -> None:
        where = f"line {number}"
        if not isinstance(row, dict):
            raise TranscriptError(self.source, where, f"expected a JSON object, got {type(row).__name__}")
        kind = row.get("type")
        if not isinstance(kind, str):
            raise TranscriptError(self.source, where, "field 'type': expected a string")
        if kind not in MESSAGE_TYPES:
            if kind == "system" and row.get("subtype") == "compact_boundary":
                self._boundary(number, row)
            else:
                if kind not in LINE_TYPES:
                    self.log.warn(where, f"unknown line type {kind!r} skipped")
                self.skipped[kind if kind != "system" else f"system:{row.get('subtype')}"] += 1
            return
        if row.get("isSidechain") and not keep_sidechain:
            self.skipped["sidechain"] += 1
            return
        for key, name in (
            ("sessionId", "session_id"),
            ("cwd", "cwd"),
            ("version", "claude_code_version"),
            ("gitBranch", "git_branch"),
            ("agentId", "agent_id"),
        ):
            if key in row and name not in self.meta:
                self.meta[name] = row[key]
        message = row.get("message")
        if not isinstance(message, dict):
            raise TranscriptError(self.source, where, f"field 'message': expected an object on a {kind!r} line")
        stamp = self._timestamp(row, where)
        if kind == "assistant":
            self._assistant(number, message, stamp)
        else:
            self._user(number, row, message, stamp)

    def _assistant(self, number: int, message: dict[str, Any], stamp: float | None) -> None:
        where = f"line {number}"
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        with counts_at(self.source, where):
            usage = usage_from_anthropic(message.get("usage"))
        model = message.get("model") if isinstance(message.get("model"), str) else None
        current = self.open
        if current is not None and message_id is not None and current.message_id == message_id:
            current.draft.add(message.get("content"), self.source, where, self.log)
            # Streamed lines repeat the usage; the one with most output tokens is the final count.
            if usage is not None and (
                current.usage is None or usage.completion_tokens >= current.usage.completion_tokens
            ):
                current.usage = usage
            return
        self._flush()
        draft = AssistantDraft()
        draft.add(message.get("content"), self.source, where, self.log)
        if model == SYNTHETIC_MODEL:
            usage = None  # written by Claude Code itself (an error notice), not billed by the API
        self.open = _Response(message_id, draft, number, stamp, usage, model)

    def _user(self, number: int, row: dict[str, Any], message: dict[str, Any], stamp: float | None) -> None:
        where = f"line {number}"
        tools, user = user_messages(message.get("content"), self.source, where, self.log)
        for tool in tools:
            if tool["tool_call_id"] not in self.known_calls and (
                self.open is None or all(c["id"] != tool["tool_call_id"] for c in self.open.draft.calls)
            ):
                self.log.warn(where, f"tool result for unknown call {tool['tool_call_id']!r}")
            if self.open is not None:
                self.open.tools.append((tool, stamp))
            else:
                self._emit(tool, stamp)
        if user is None:
            return
        if row.get("isCompactSummary"):
            user["display_kind"] = COMPACT_SUMMARY_KIND
        elif row.get("isMeta"):
            user["display_kind"] = META_KIND
        elif (kind := harness_kind(content_text(user))) is not None:
            user["display_kind"] = kind
        if self.open is not None and not row.get("isCompactSummary"):
            self.open.after.append((user, stamp))
            return
        self._flush()
        index = self._emit(user, stamp)
        if row.get("isCompactSummary"):
            self._close_boundary(index, user)

    def _boundary(self, number: int, row: dict[str, Any]) -> None:
        self._flush()
        if self.boundary is not None:
            self.log.warn(f"line {self.boundary[0]}", "compact_boundary without a summary line after it")
            self._close_boundary(len(self.messages), None)
        meta = row.get("compactMetadata")
        self.boundary = (number, meta if isinstance(meta, dict) else {})

    def _close_boundary(self, index: int, summary: Message | None) -> None:
        if self.boundary is None:
            self.log.warn(None, f"message {index}: compact summary without a compact_boundary line")
            self.events.append(CompactionEvent(message_index=index, trigger="auto", summary=_text(summary)))
            return
        number, meta = self.boundary
        trigger = meta.get("trigger")
        if trigger not in ("auto", "manual"):
            self.log.warn(
                f"line {number}",
                f"compact_boundary trigger {trigger!r} (expected 'auto' or 'manual'), recorded as 'auto'",
            )
            trigger = "auto"
        pre = meta.get("preTokens")
        self.events.append(
            CompactionEvent(
                message_index=index,
                trigger=str(trigger),
                pre_tokens=int(pre) if isinstance(pre, (int, float)) else None,
                summary=_text(summary),
            )
        )
        self.boundary = None

    # ------------------------------------------------------------------ output

    def _emit(self, message: Message, stamp: float | None) -> int:
        index = len(self.messages)
        self.messages.append(message)
        if stamp is not None:
            self.timestamps[index] = stamp
        return index

    def _flush(self) -> None:
        current, self.open = self.open, None
        if current is None:
            return
        assistant = current.draft.message()
        index = self._emit(assistant, current.timestamp)
        if current.usage is not None:
            self.usage[index] = current.usage
        if current.model:
            self.models[index] = current.model
        self.known_calls.update(c["id"] for c in current.draft.calls)
        for tool, stamp in current.tools:
            self._emit(tool, stamp)
        for user, stamp in current.after:
            self._emit(user, stamp)

    def finish(self, transcript_id: str, subagent: bool) -> Transcript:
        self._flush()
        if self.boundary is not None:
            self._close_boundary(len(self.messages), None)
        if not self.messages:
            raise TranscriptError(self.source, None, "no user or assistant lines: expected a Claude Code session log")
        counts = Counter(self.models.values())
        model = next(iter(self.models.values()), None)
        metadata: dict[str, Any] = {
            **self.meta,
            "subagent": subagent,
            "skipped_lines": dict(sorted(self.skipped.items())),
        }
        if len(counts) > 1:
            metadata["models"] = dict(sorted(counts.items()))
            metadata["request_models"] = {str(i): m for i, m in sorted(self.models.items())}
        if not subagent:
            logs = _subagent_logs(self.path)
            if logs:
                metadata["subagent_logs"] = logs
        # The logs omit Claude Code's system prompt and tool schemas; the first request bills them.
        metadata["unseen_prefix"] = "system prompt and tool schemas are not in the log"
        return Transcript(
            transcript_id=transcript_id,
            messages=self.messages,
            usage=self.usage,
            timestamps=self.timestamps,
            events=self.events,
            source=self.source,
            source_format="claude-code",
            model=model,
            metadata=self.log.into(metadata),
        )

    def _timestamp(self, row: dict[str, Any], where: str) -> float | None:
        raw = row.get("timestamp")
        if raw is None:
            return None
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw) / (1000.0 if raw > 1e11 else 1.0)
        if isinstance(raw, str):
            try:
                return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
            except ValueError:
                pass
        self.log.warn(where, f"field 'timestamp': expected an ISO 8601 time, got {raw!r}; ignored")
        return None


def load(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    """One transcript per log file (a main session or a subagent log)."""
    first = next((row for _, row in rows if isinstance(row, dict) and row.get("type") in ("user", "assistant")), None)
    subagent = bool(first and first.get("isSidechain"))
    builder = _Builder(path)
    for number, row in rows:
        builder.feed(number, row, keep_sidechain=subagent)
    stem = path.name.split(".")[0]
    session = builder.meta.get("session_id")
    transcript_id = f"{session}/{stem}" if subagent and session else stem
    return [builder.finish(transcript_id, subagent)]


def _subagent_logs(path: Path) -> list[str]:
    """Subagent logs stored beside a main session (``<session>/subagents/*.jsonl``), relative paths."""
    folder = path.parent / path.name.split(".")[0] / "subagents"
    if not folder.is_dir():
        return []
    return sorted(str(p.relative_to(path.parent)) for p in folder.glob("*.jsonl*"))


def _text(message: Message | None) -> str | None:
    if message is None:
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return None
