"""Shared helpers of the scaling benchmarks: longer sessions built from a real one, and the floor.

A session repeated ``k`` times keeps its shape (turns, tool groups, adjacent user rows) while each
copy's texts are made distinct (a copy tag in front of every text, and as one more argument of every
tool call), so the tokenization floor grows with the copies and no memo can cheat by recognising a
repeated message. (Before the arguments were tagged, the copies shared them: the floor grew 3.4x
at 4x and 7.2x at 8x while the host's work per request stayed the same, which read as growth.)
"""

from __future__ import annotations

import json
import time
from typing import Any

from contextlab import Transcript
from contextlab.engine import Message
from contextlab.messages import content_text, tool_call_arguments, tool_calls
from contextlab.tokens import load_encoding


def _tagged(value: Any, tag: str) -> Any:
    if isinstance(value, str):
        return f"{tag} {value}" if value else value
    if isinstance(value, list):
        return [
            {**p, "text": f"{tag} {p['text']}"} if isinstance(p, dict) and isinstance(p.get("text"), str) else p
            for p in value
        ]
    return value


def _tagged_call(call: Any, tag: str) -> Any:
    """A tool call whose JSON arguments carry the copy tag (as one more argument), so a copy's
    arguments are texts of their own too; other shapes are kept as they are."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return call
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return call
    if not isinstance(decoded, dict):
        return call
    return {**call, "function": {**function, "arguments": json.dumps({"copy": tag, **decoded})}}


def _copy(message: Message, tag: str) -> Message:
    out = dict(message)
    if "content" in out:
        out["content"] = _tagged(out["content"], tag)
    if isinstance(out.get("tool_calls"), list):
        out["tool_calls"] = [_tagged_call(call, tag) for call in out["tool_calls"]]
    out.pop("message_uid", None)
    return out


def repeat_transcript(transcript: Transcript, times: int) -> Transcript:
    """``transcript`` played ``times`` times in a row as one session, each copy's texts made distinct."""
    if times <= 1:
        return transcript
    messages: list[Message] = []
    usage = {}
    timestamps = {}
    span = (
        (max(transcript.timestamps.values()) - min(transcript.timestamps.values()) + 60.0)
        if transcript.timestamps
        else 0.0
    )
    for k in range(times):
        offset = len(messages)
        tag = f"[copy {k}]" if k else ""
        messages.extend(_copy(m, tag) if tag else dict(m) for m in transcript.messages)
        usage.update({i + offset: u for i, u in transcript.usage.items()})
        timestamps.update({i + offset: t + k * span for i, t in transcript.timestamps.items()})
    return Transcript(
        f"{transcript.transcript_id}x{times}",
        messages,
        transcript.system_prompt,
        transcript.tools,
        usage=usage,
        timestamps=timestamps,
        model=transcript.model,
        source_format=transcript.source_format,
    )


def tokenize_distinct_once(transcript: Transcript, encoding: str = "cl100k_base") -> float:
    """CPU seconds to tokenize every distinct text of the transcript once, with no memo (the floor)."""
    enc = load_encoding(encoding)
    texts = {transcript.system_prompt or ""}
    for message in transcript.messages:
        texts.add(content_text(message))
        texts.update(tool_call_arguments(c) for c in tool_calls(message))
    started = time.process_time()
    for text in texts:
        enc.encode_ordinary(text)
    return time.process_time() - started
