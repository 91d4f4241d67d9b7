"""Aider's chat history (``.aider.chat.history.md``) and LLM history log (``--llm-history-file``).

Chat history: Markdown, one session per ``# aider chat started at ...`` heading; lines starting
``#### `` are the user's input, lines starting ``> `` are Aider's own output (not sent to the model),
everything else is the assistant's reply. Aider commands (``/add``, ``/run``, ...) are not model
turns and are skipped; ``/ask``, ``/code`` and ``/architect`` keep their text. A ``> Tokens: 2.3k
sent, 1.1k cache write, 2.0k cache hit, 120 received.`` line is that reply's usage (rounded as
Aider prints it: marked ``approximate`` in ``raw``).

LLM history: blocks headed ``TO LLM <time>`` (the whole request: ``-------``-separated messages whose
lines are prefixed with the role, ``SYSTEM``/``USER``/``ASSISTANT``) and ``LLM RESPONSE <time>``
(``ASSISTANT``-prefixed lines). Each request is a full prompt, so the conversation is rebuilt from
the growing prefix (:mod:`~contextlab.transcripts.per_request`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage, Transcript
from contextlab.transcripts.per_request import Step, parse_time, rebuild

SESSION_HEADING = re.compile(r"^# aider chat started at (.*)$", re.MULTILINE)
LLM_BLOCK = re.compile(r"^(TO LLM|LLM RESPONSE) (\d{4}-\d\d-\d\dT[\d:.+-]+)\s*$", re.MULTILINE)
TOKENS = re.compile(
    r"Tokens: (?P<sent>[\d.]+k?) sent(?:, (?P<write>[\d.]+k?) cache write)?(?:, (?P<hit>[\d.]+k?) cache hit)?"
    r", (?P<received>[\d.]+k?) received"
)
NOT_SENT = frozenset(
    {
        "add",
        "drop",
        "run",
        "undo",
        "clear",
        "tokens",
        "model",
        "models",
        "exit",
        "quit",
        "ls",
        "diff",
        "commit",
        "git",
        "help",
        "read-only",
        "reset",
        "map",
        "map-refresh",
        "settings",
        "voice",
        "paste",
        "copy",
        "web",
        "test",
        "lint",
        "editor",
        "chat-mode",
        "weak-model",
        "editor-model",
        "load",
        "save",
        "report",
        "think-tokens",
        "reasoning-effort",
        "multiline-mode",
        "copy-context",
        "context",
    }
)
ROLE_PREFIX = re.compile(r"^(SYSTEM|USER|ASSISTANT|TOOL|FUNCTION)(?: (.*))?$")


def looks_like_chat_history(text: str) -> bool:
    return bool(SESSION_HEADING.search(text[:4096])) or text.lstrip().startswith("#### ")


def looks_like_llm_history(text: str) -> bool:
    found = LLM_BLOCK.search(text[:4096])
    return found is not None and text[: found.start()].strip() == ""


# --------------------------------------------------------------------------- chat history


def load_chat_history(path: Path, text: str) -> list[Transcript]:
    source = str(path)
    starts = [(m.start(), m.group(1).strip()) for m in SESSION_HEADING.finditer(text)] or [(0, "")]
    stem = path.name.split(".")[0] or "aider"
    out: list[Transcript] = []
    for k, (start, started) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        first_line = text[:start].count("\n") + 1
        session = _chat_session(source, text[start:end], first_line, started)
        if session is None:
            continue
        messages, usage, skipped = session
        metadata: dict[str, Any] = {"started": started} if started else {}
        if skipped:
            metadata["skipped_commands"] = skipped
        out.append(
            Transcript(
                transcript_id=stem if len(starts) == 1 else f"{stem}#{k}",
                messages=messages,
                usage=usage,
                timestamps={0: stamp} if (stamp := parse_time(started.replace(" ", "T"))) is not None else {},
                source=source,
                source_format="aider",
                metadata=metadata,
            )
        )
    if not out:
        raise TranscriptError(source, None, "no chat turns in this Aider chat history")
    return out


def _chat_session(
    source: str, text: str, first_line: int, started: str
) -> tuple[list[Message], dict[int, RecordedUsage], int] | None:
    messages: list[Message] = []
    usage: dict[int, RecordedUsage] = {}
    user: list[str] = []
    assistant: list[str] = []
    skipped = 0

    def close() -> None:
        nonlocal skipped
        if user:
            content = "".join(user).strip("\n")
            user.clear()
            command = re.match(r"^/([\w-]+)\s*", content)
            if command and command.group(1) in NOT_SENT:
                skipped += 1
            elif content:
                messages.append({"role": "user", "content": content[command.end() :] if command else content})
        if assistant:
            content = "".join(assistant).strip("\n")
            assistant.clear()
            if content.strip():
                messages.append({"role": "assistant", "content": content})

    for line in text.splitlines(keepends=True):
        if line.startswith("# aider chat started at"):
            continue
        if line.startswith("#### "):
            if assistant:
                close()
            user.append(line[5:])
        elif line.startswith("> ") or line.rstrip("\n") == ">":
            close()
            found = TOKENS.search(line)
            if found and messages and messages[-1]["role"] == "assistant":
                usage[len(messages) - 1] = _tokens(found, line.strip())
        elif not line.strip() and not assistant:
            if user:
                user.append(line)
        else:
            if user:
                close()
            assistant.append(line)
    close()
    return (messages, usage, skipped) if messages else None


def _number(text: str | None) -> int:
    if not text:
        return 0
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


def _tokens(found: re.Match[str], line: str) -> RecordedUsage:
    sent, write, hit = _number(found.group("sent")), _number(found.group("write")), _number(found.group("hit"))
    received = _number(found.group("received"))
    prompt = max(sent, write + hit)
    raw = {
        "prompt_tokens": prompt,
        "completion_tokens": received,
        "prompt_tokens_details": {"cached_tokens": hit, "cache_write_tokens": write},
        "approximate": True,
        "aider_line": line,
    }
    return RecordedUsage(prompt, received, cache_read_tokens=hit, cache_write_tokens=write, raw=raw)


# --------------------------------------------------------------------------- LLM history


def load_llm_history(path: Path, text: str) -> list[Transcript]:
    source = str(path)
    log = ImportLog(source)
    blocks = list(LLM_BLOCK.finditer(text))
    steps: list[Step] = []
    pending: Step | None = None
    for k, block in enumerate(blocks):
        body = text[block.end() : blocks[k + 1].start() if k + 1 < len(blocks) else len(text)]
        line = text[: block.start()].count("\n") + 1
        stamp = parse_time(block.group(2))
        if block.group(1) == "TO LLM":
            if pending is not None:
                steps.append(pending)
            messages = _request_messages(body, source, line)
            system = None
            if messages and messages[0]["role"] == "system":
                system = str(messages.pop(0)["content"])
            pending = Step(messages, None, system_prompt=system, timestamp=stamp, where=f"line {line}")
        else:
            reply = _strip_role(body, "ASSISTANT")
            if pending is None:
                log.warn(f"line {line}", "LLM RESPONSE without a request before it; skipped")
                continue
            pending.response = {"role": "assistant", "content": reply}
            steps.append(pending)
            pending = None
    if pending is not None:
        steps.append(pending)
    if not steps:
        raise TranscriptError(source, None, "no 'TO LLM' request blocks in this Aider LLM history")
    return rebuild(steps, source, path.name.split(".")[0] or "aider", "aider-llm-history", log, {})


def _request_messages(body: str, source: str, line: int) -> list[Message]:
    messages: list[Message] = []
    for chunk in body.split("\n-------\n"):
        lines = [x for x in chunk.split("\n") if x != "-------"]
        while lines and not lines[-1]:
            lines.pop()
        while lines and not lines[0]:
            lines.pop(0)
        if not lines:
            continue
        first = ROLE_PREFIX.match(lines[0])
        if first is None:
            raise TranscriptError(
                source, f"line {line}", f"expected a role-prefixed message line, got {lines[0][:40]!r}"
            )
        role = first.group(1)
        mapped = {"SYSTEM": "system", "USER": "user", "ASSISTANT": "assistant"}.get(role, "user")
        messages.append({"role": mapped, "content": _strip_role("\n".join(lines), role)})
    return messages


def _strip_role(body: str, role: str) -> str:
    out = []
    for line in body.strip("\n").split("\n"):
        if line == role:
            out.append("")
        elif line.startswith(role + " "):
            out.append(line[len(role) + 1 :])
        elif line != "-------":
            out.append(line)
    return "\n".join(out)
