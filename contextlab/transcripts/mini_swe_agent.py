"""mini-swe-agent trajectories (``*.traj.json``): ``{info, messages, trajectory_format, instance_id}``.

The agent has no native tool calls: it writes one bash block per turn and the command output comes
back as the next ``user`` message. Those outputs are loaded faithfully as user messages (no tool
calls are invented) marked ``display_kind = "observation"`` (every user row after the task is the
harness's); ``metadata["tool_calls"] = "none: command outputs are user messages"`` says so.
Each assistant message's ``extra.response`` holds the provider response: its ``usage`` becomes the
:class:`RecordedUsage` of that message and ``created`` its timestamp. The rest of ``extra`` (the raw
response, with encrypted reasoning) is not kept: mini-swe-agent never sends it back to the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import FENCED_ACTIONS, RecordedUsage, Transcript
from contextlab.transcripts.openai_chat import check_message, usage_from_openai

NO_TOOL_CALLS = FENCED_ACTIONS


def looks_like(document: Any) -> bool:
    """A mini-swe-agent trajectory: an object with ``messages`` and a ``mini-swe-agent`` format tag."""
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        return False
    tag = document.get("trajectory_format")
    return (isinstance(tag, str) and tag.startswith("mini-swe-agent")) or (
        isinstance(document.get("info"), dict) and "mini_version" in document["info"]
    )


def load(path: Path, document: dict[str, Any]) -> list[Transcript]:
    """One transcript per trajectory file."""
    source = str(path)
    log = ImportLog(source)
    raw_messages = document["messages"]
    messages: list[Message] = []
    usage: dict[int, RecordedUsage] = {}
    timestamps: dict[int, float] = {}
    system_prompt: str | None = None
    model: str | None = None
    for i, raw in enumerate(raw_messages):
        where = f"message {i}"
        message = check_message(raw, source, where)
        extra = message.pop("extra", None)
        if message["role"] == "system" and not messages and system_prompt is None:
            content = message.get("content")
            if isinstance(content, str):
                system_prompt = content
                continue
        index = len(messages)
        if message["role"] == "user" and any(m["role"] == "user" for m in messages):
            message["display_kind"] = "observation"  # only the first user row (the task) is a person's
        messages.append(message)
        if extra is None:
            continue
        if not isinstance(extra, dict):
            log.warn(where, f"field 'extra': expected an object, got {type(extra).__name__}; ignored")
            continue
        response = extra.get("response")
        if not isinstance(response, dict):
            continue
        recorded = response.get("usage")
        if message["role"] == "assistant" and isinstance(recorded, dict):
            try:
                usage[index] = usage_from_openai(recorded)
            except (TypeError, ValueError):
                log.warn(where, "field 'extra.response.usage': malformed token counts; ignored")
        created = response.get("created")
        if isinstance(created, (int, float)) and not isinstance(created, bool):
            timestamps[index] = float(created)
        if model is None and isinstance(response.get("model"), str):
            model = response["model"]
    info = _object(document.get("info"))
    if model is None:
        name = _object(_object(info.get("config")).get("model")).get("model_name")
        model = name if isinstance(name, str) else None
    metadata: dict[str, Any] = {
        "instance_id": document.get("instance_id"),
        "trajectory_format": document.get("trajectory_format"),
        "exit_status": info.get("exit_status"),
        "mini_version": info.get("mini_version"),
        "model_stats": info.get("model_stats"),
        "submission": info.get("submission"),
        "tool_calls": NO_TOOL_CALLS,
    }
    if not any(m["role"] == "assistant" for m in messages):
        raise TranscriptError(source, "field 'messages'", "no assistant message: expected a mini-swe-agent trajectory")
    stem = path.name.split(".")[0]
    return [
        Transcript(
            transcript_id=str(document.get("instance_id") or stem),
            messages=messages,
            system_prompt=system_prompt,
            usage=usage,
            timestamps=timestamps,
            source=source,
            source_format="mini-swe-agent",
            model=model,
            metadata=log.into(metadata),
        )
    ]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
