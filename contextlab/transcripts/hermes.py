"""Hermes Agent's own session stores: the session JSON log and the ``state.db`` SQLite store.

Session JSON (``~/.hermes/sessions/session_<id>.json``): ``{session_id, model, platform,
session_start, last_updated, system_prompt, tools, message_count, messages}``; the messages are the
OpenAI-format history the agent kept (``tool_calls``, ``tool`` results, ``reasoning``).

``state.db`` (schema in upstream ``hermes_state_common.py`` ``SCHEMA_SQL``, NousResearch/hermes-agent):
``sessions`` rows (``id``, ``parent_session_id``, ``end_reason``, ``model``, ``system_prompt`` or
``system_prompt_hash`` into ``system_prompts``, token totals) and ``messages`` rows (``session_id``,
``role``, ``content``, ``tool_calls`` JSON, ``tool_call_id``, ``finish_reason``, ``reasoning``,
``reasoning_content``, ``reasoning_details`` / ``codex_*_items`` JSON,
``api_content``, ``timestamp``, ``active``, ``compacted``, ``_compressed_summary``). A compaction
either rotates the session (the old one ends with ``end_reason = 'compression'`` and a child session
carrying ``parent_session_id`` continues with the summary and copies of the kept messages) or
archives the old rows in place (``active = 0, compacted = 1``) under the same session. Each
conversation (a root session and its chain of compression continuations) becomes one transcript of
the original history: archived rows are kept, copies carried over a compaction are dropped, and each
boundary becomes a :class:`CompactionEvent` holding the summary. Branch and subagent sessions are
conversations of their own. The database is opened read-only and never modified.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.io import BadNumber, token_count
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import CompactionEvent, Transcript
from contextlab.transcripts.openai_chat import check_message, transcript_from_messages
from contextlab.transcripts.per_request import message_key, parse_time

SUMMARY_MARKERS = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "--- END OF CONTEXT SUMMARY")


# --------------------------------------------------------------------------- session JSON


def looks_like_session(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get("messages"), list)
        and isinstance(document.get("session_id"), str)
    )


def load_session(path: Path, document: dict[str, Any]) -> list[Transcript]:
    source = str(path)
    # Reasoning keys stay as the host kept them: ``reasoning`` (its trajectory field) and
    # ``reasoning_content`` (an echo provider's) are sent differently (docs/host-loop.md).
    messages = [dict(m) if isinstance(m, dict) else m for m in document["messages"]]
    tools = document.get("tools") if isinstance(document.get("tools"), list) else []
    system = document.get("system_prompt")
    if (
        isinstance(system, str)
        and system
        and not (messages and isinstance(messages[0], dict) and messages[0].get("role") == "system")
    ):
        messages.insert(0, {"role": "system", "content": system})
    keep = ("model", "platform", "base_url", "session_start", "last_updated", "message_count")
    transcript = transcript_from_messages(
        messages,
        source,
        str(document.get("session_id") or path.name.split(".")[0]),
        tools=tools,
        source_format="hermes-session",
        metadata={k: document[k] for k in keep if k in document},
    )
    if isinstance(document.get("model"), str):
        transcript.model = document["model"]
    return [transcript]


# --------------------------------------------------------------------------- state.db


def load_state_db(path: Path) -> list[Transcript]:
    source = str(path)
    try:
        # immutable=1: read the file as it is, never touch its WAL or journal (a live store may be open).
        connection = sqlite3.connect(f"file:{path.resolve()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as error:
        raise TranscriptError(source, None, f"cannot open as SQLite: {error}") from None
    try:
        connection.row_factory = sqlite3.Row
        return _load_db(connection, source)
    except sqlite3.DatabaseError as error:
        raise TranscriptError(source, None, f"not a readable Hermes state.db: {error}") from None
    finally:
        connection.close()


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})")}


def _load_db(connection: sqlite3.Connection, source: str) -> list[Transcript]:
    session_columns = _columns(connection, "sessions")
    message_columns = _columns(connection, "messages")
    if not {"id"} <= session_columns or not {"session_id", "role", "content"} <= message_columns:
        raise TranscriptError(
            source, None, "SQLite file without Hermes 'sessions' and 'messages' tables: not a Hermes state.db"
        )
    order = "started_at" if "started_at" in session_columns else "rowid"
    sessions = [dict(row) for row in connection.execute(f"SELECT * FROM sessions ORDER BY {order}, id")]
    prompts: dict[str, str] = {}
    if _columns(connection, "system_prompts") >= {"hash", "prompt"}:
        prompts = {
            str(r["hash"]): str(r["prompt"]) for r in connection.execute("SELECT hash, prompt FROM system_prompts")
        }
    visible = ""
    if {"active", "compacted"} <= message_columns:
        visible = "WHERE active = 1 OR compacted = 1"
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in connection.execute(f"SELECT * FROM messages {visible} ORDER BY id"):
        rows.setdefault(str(row["session_id"]), []).append(dict(row))
    by_id = {str(s["id"]): s for s in sessions}
    continuation: dict[str, str] = {}
    for s in sessions:
        parent = by_id.get(str(s.get("parent_session_id") or ""))
        if parent is not None and parent.get("end_reason") == "compression" and str(parent["id"]) not in continuation:
            continuation[str(parent["id"])] = str(s["id"])
    continued = set(continuation.values())
    out: list[Transcript] = []
    for s in sessions:
        if str(s["id"]) in continued:
            continue
        chain = [s]
        while str(chain[-1]["id"]) in continuation and len(chain) <= len(sessions):
            chain.append(by_id[continuation[str(chain[-1]["id"])]])
        found = _conversation(chain, rows, prompts, source)
        if found is not None:
            out.append(found)
    if not out:
        raise TranscriptError(source, None, "Hermes state.db without any session messages")
    return out


def _conversation(
    chain: list[dict[str, Any]], rows: dict[str, list[dict[str, Any]]], prompts: dict[str, str], source: str
) -> Transcript | None:
    log = ImportLog(source)
    history: list[Message] = []
    timestamps: dict[int, float] = {}
    events: list[CompactionEvent] = []
    seen: set[Any] = set()
    copies = 0
    for k, session in enumerate(chain):
        copying = k > 0
        pending: int | None = None
        if k > 0:
            events.append(CompactionEvent(len(history), "auto"))
            pending = len(events) - 1
        for row in rows.get(str(session["id"]), []):
            where = f"session {session['id']}, message row {row.get('id')}"
            message = _message(row, source, where, log)
            if message is None:
                continue
            if _is_summary(row, message):
                summary = str(message.get("content") or "")
                if pending is not None and events[pending].summary is None:
                    events[pending] = CompactionEvent(events[pending].message_index, "auto", summary=summary)
                else:
                    events.append(CompactionEvent(len(history), "auto", summary=summary))
                pending = None
                copying = True
                continue
            key = message_key(message)
            if copying and key in seen:
                copies += 1
                continue
            copying = False
            stamp = parse_time(row.get("timestamp"))
            if stamp is not None:
                timestamps[len(history)] = stamp
            history.append(message)
            seen.add(key)
    if not history:
        return None
    root = chain[0]
    system = root.get("system_prompt")
    if not system and root.get("system_prompt_hash"):
        system = prompts.get(str(root["system_prompt_hash"]))
    try:
        totals = {
            key: sum(token_count(s.get(key), f"sessions.{key}") for s in chain)
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "api_call_count")
            if key in root
        }
    except BadNumber as error:
        raise TranscriptError(source, f"session {root['id']}", str(error)) from None
    metadata: dict[str, Any] = {
        "sessions": [str(s["id"]) for s in chain],
        "session_source": root.get("source"),
        "title": root.get("title"),
        "recorded_totals": totals,
        "copies_dropped": copies,
    }
    return Transcript(
        transcript_id=str(root["id"]),
        messages=history,
        system_prompt=system if isinstance(system, str) else None,
        timestamps=timestamps,
        events=events,
        source=source,
        source_format="hermes-state-db",
        model=root.get("model") if isinstance(root.get("model"), str) else None,
        metadata=log.into(metadata),
    )


def _is_summary(row: dict[str, Any], message: Message) -> bool:
    if row.get("_compressed_summary"):
        return True
    content = message.get("content")
    return (
        isinstance(content, str)
        and any(marker in content[:20000] for marker in SUMMARY_MARKERS)
        and (content.lstrip().startswith("[CONTEXT") or "--- END OF CONTEXT SUMMARY" in content)
    )


def _restore_assistant_fields(message: Message, row: dict[str, Any], where: str, log: ImportLog) -> None:
    """The assistant-only columns, restored as the host restores them when it reloads a session
    (0.19.0 ``hermes_state.py``, the conversation replay): ``finish_reason`` and ``reasoning`` when
    set, ``reasoning_content`` whenever not NULL (an empty string is an echo provider's placeholder),
    and the JSON columns ``reasoning_details``, ``codex_reasoning_items``, ``codex_message_items`` (one
    that does not parse is left out with a warning, as the host leaves it out)."""
    for key in ("finish_reason", "reasoning"):
        if isinstance(row.get(key), str) and row[key]:
            message[key] = row[key]
    if isinstance(row.get("reasoning_content"), str):
        message["reasoning_content"] = row["reasoning_content"]
    for key in ("reasoning_details", "codex_reasoning_items", "codex_message_items"):
        raw = row.get(key)
        if not raw:
            continue
        try:
            message[key] = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            log.warn(where, f"column {key!r} is not JSON; left out")


def _message(row: dict[str, Any], source: str, where: str, log: ImportLog) -> Message | None:
    role = row.get("role")
    if role not in ("user", "assistant", "tool", "system"):
        log.warn(where, f"role {role!r} is not a chat role; row skipped")
        return None
    message: Message = {"role": role, "content": row.get("content")}
    raw_calls = row.get("tool_calls")
    if raw_calls:
        try:
            calls = json.loads(raw_calls) if isinstance(raw_calls, str) else raw_calls
        except ValueError:
            raise TranscriptError(source, where, "column 'tool_calls': not JSON") from None
        if not isinstance(calls, list):
            raise TranscriptError(source, where, "column 'tool_calls': expected a JSON list")
        if calls:
            message["tool_calls"] = calls
    if role == "tool":
        message["tool_call_id"] = str(row.get("tool_call_id") or "")
    if role == "assistant":
        _restore_assistant_fields(message, row, where, log)
    if isinstance(row.get("api_content"), str) and row["api_content"]:
        message["api_content"] = row["api_content"]
    if isinstance(row.get("display_kind"), str) and row["display_kind"]:
        message["display_kind"] = row["display_kind"]
    if message["content"] is not None and not isinstance(message["content"], str):
        message["content"] = str(message["content"])
    # The same shape checks as every other importer, so a bad row fails here and not in a later `convert`.
    return check_message(message, source, where)
