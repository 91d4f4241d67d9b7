"""SWE-agent trajectories (``*.traj``): ``{trajectory, history, info, ...}``.

``history`` is the message list the model saw (OpenAI roles; with function calling, assistant
messages carry ``tool_calls`` and tool messages ``tool_call_ids``). SWE-agent's own bookkeeping
fields (``agent``, ``message_type``, ``thought``, ``action``, ``cache_control``) are not sent and
are dropped; demonstration messages (``is_demo``) are sent, so they stay, marked with
``display_kind = "demo"``; observations sent as user rows (no function calling) are marked
``"observation"``. SWE-agent records no per-call usage, only totals
(``info.model_stats``), which go to ``metadata["model_stats"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import Transcript
from contextlab.transcripts.openai_chat import check_message

BOOKKEEPING = frozenset({"agent", "message_type", "thought", "action", "is_demo", "cache_control", "tool_call_ids"})


def looks_like(document: Any) -> bool:
    """A SWE-agent trajectory: an object with a ``history`` list of messages (``trajectory`` and
    ``info`` usually beside it; some files hold only ``history``)."""
    if not isinstance(document, dict) or not isinstance(document.get("history"), list):
        return False
    if "trajectory" in document or "info" in document:
        return True
    history = document["history"]
    return (
        "messages" not in document
        and bool(history)
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in history[:3])
    )


def load(path: Path, document: dict[str, Any]) -> list[Transcript]:
    """One transcript per trajectory file."""
    source = str(path)
    log = ImportLog(source)
    messages: list[Message] = []
    system_prompt: str | None = None
    for i, raw in enumerate(document["history"]):
        where = f"history {i}"
        if not isinstance(raw, dict):
            raise TranscriptError(source, where, f"expected a message object, got {type(raw).__name__}")
        raw = dict(raw)
        ids = raw.get("tool_call_ids")
        if raw.get("role") == "tool" and "tool_call_id" not in raw:
            if not isinstance(ids, list) or not ids or not all(isinstance(x, str) for x in ids):
                raise TranscriptError(source, where, "a tool message needs 'tool_call_ids' (a list of strings)")
            if len(ids) > 1:
                log.warn(where, f"one observation answers {len(ids)} calls; attached to the first, {ids[0]!r}")
            raw["tool_call_id"] = ids[0]
        demo = bool(raw.get("is_demo"))
        message = check_message({k: v for k, v in raw.items() if k not in BOOKKEEPING}, source, where)
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = [_strip_cache_control(part) for part in content]
        if demo:
            message["display_kind"] = "demo"
        elif message["role"] == "user" and raw.get("message_type") == "observation":
            message["display_kind"] = "observation"  # command output, without function calling
        if message["role"] == "system" and not messages and system_prompt is None and isinstance(content, str):
            system_prompt = content
            continue
        messages.append(message)
    info: dict[str, Any] = document["info"] if isinstance(document.get("info"), dict) else {}
    stem = path.name.split(".")[0]
    metadata: dict[str, Any] = {
        "exit_status": info.get("exit_status"),
        "submission": info.get("submission"),
        "model_stats": info.get("model_stats"),
        "swe_agent_version": info.get("swe_agent_version"),
        "trajectory_steps": len(document["trajectory"]) if isinstance(document.get("trajectory"), list) else None,
    }
    if not messages:
        raise TranscriptError(source, "field 'history'", "no messages: expected a SWE-agent trajectory")
    return [
        Transcript(
            transcript_id=stem,
            messages=messages,
            system_prompt=system_prompt,
            source=source,
            source_format="swe-agent",
            metadata=log.into(metadata),
        )
    ]


def _strip_cache_control(part: Any) -> Any:
    # SWE-agent adds Anthropic cache_control markers to parts; they steer caching, not content.
    if isinstance(part, dict) and "cache_control" in part:
        return {k: v for k, v in part.items() if k != "cache_control"}
    return part
