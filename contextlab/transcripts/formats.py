"""The formats contextlab reads, and the one-line error for a file in none of them (naming the
closest format by the fields it shares with the file)."""

from __future__ import annotations

from typing import Any

from contextlab.errors import UnknownFormat

FORMATS: tuple[str, ...] = (
    "contextlab (native JSONL)",
    "claude-code (session and subagent JSONL)",
    "codex (Codex CLI rollout JSONL, current and older layout)",
    "claude-trace / request logs (one {request, response} per call; Anthropic or OpenAI bodies)",
    "tau-bench (result JSON)",
    "mini-swe-agent (.traj.json)",
    "swe-agent (.traj, or a file with only 'history')",
    "openhands (trajectory events, evaluation output.jsonl)",
    "gemini-cli (chat session JSON; Gemini API 'contents')",
    "sharegpt (conversations with from/value; Hermes Agent trajectories)",
    "hermes (session JSON, state.db SQLite store)",
    "otel / langfuse (GenAI spans, generations)",
    "anthropic (Messages API request/response JSON)",
    "aider (.aider.chat.history.md, --llm-history-file log)",
    "openai (chat JSON and JSONL, legacy 'function' role)",
)
"""The formats :func:`~contextlab.transcripts.load_transcripts` recognises (sniffed from content)."""

SIGNATURES: dict[str, frozenset[str]] = {
    "openai": frozenset({"messages", "role", "content", "tool_calls", "tool_call_id"}),
    "anthropic": frozenset({"system", "messages", "content", "type", "model", "stop_reason"}),
    "claude-trace": frozenset({"request", "response", "body", "body_raw", "logged_at"}),
    "sharegpt": frozenset({"conversations", "from", "value"}),
    "claude-code": frozenset({"type", "uuid", "sessionId", "message", "parentUuid", "isSidechain"}),
    "codex": frozenset({"type", "payload", "timestamp", "call_id", "arguments"}),
    "swe-agent": frozenset({"history", "trajectory", "info", "environment"}),
    "mini-swe-agent": frozenset({"messages", "info", "trajectory_format", "instance_id"}),
    "tau-bench": frozenset({"task_id", "trial", "reward", "traj", "info"}),
    "openhands": frozenset({"action", "observation", "source", "args", "extras", "cause", "history"}),
    "gemini-cli": frozenset({"sessionId", "projectHash", "startTime", "lastUpdated", "toolCalls", "parts"}),
    "hermes": frozenset({"session_id", "session_start", "last_updated", "platform", "system_prompt"}),
    "otel / langfuse": frozenset({"resourceSpans", "scopeSpans", "spans", "attributes", "traceId", "observations"}),
}


def _keys(value: Any, depth: int = 0) -> set[str]:
    if depth > 2:
        return set()
    if isinstance(value, dict):
        found = {str(k) for k in value}
        for item in list(value.values())[:20]:
            found |= _keys(item, depth + 1)
        return found
    if isinstance(value, list):
        found = set()
        for item in value[:3]:
            found |= _keys(item, depth + 1)
        return found
    return set()


def closest(document: Any) -> str | None:
    """The format whose typical fields the document shares most (None when it shares none)."""
    keys = _keys(document)
    scored = [(len(keys & sig) / len(sig), name) for name, sig in SIGNATURES.items()]
    score, name = max(scored)
    return name if score > 0 else None


NOT_A_FORMAT = "not a format contextlab reads"
"""The head of :func:`unknown_format`'s message (what a folder sweep says of a file it skips)."""


def unknown_format(source: str, document: Any) -> UnknownFormat:
    """The one-line error for a file in no supported format."""
    guess = closest(document)
    hint = f"closest: {guess}; " if guess else ""
    names = ", ".join(f.split(" (")[0] for f in FORMATS)
    return UnknownFormat(source, None, f"{NOT_A_FORMAT}; {hint}formats: {names}")
