"""After a committed compaction the history must still hold a real user turn (``docs/host-loop.md``,
"A real user turn after a compaction").

Strict chat templates reject a request without a user message, so upstream's commit path restores
one when a compaction left only the summary, assistant and tool rows: a copy of the newest real user
ask placed where it keeps the roles alternating, else a fixed continuation marker. The rule follows
``agent/conversation_compression.py`` of ``zpthree/hermes-agent@a279de39f004169dc60e966669c534a9f364c3d8``
(``_ensure_compressed_has_user_turn``, ``_is_real_user_message``, ``_insert_real_user_anchor``,
``_merge_anchor_into_user_message``), the newer-rules source ``docs/compressor.md`` names. A summary
row never counts as the user's turn, even when the summary was merged into the user's message: the
model is told not to act on it.
"""

from __future__ import annotations

from contextlab import hermes_texts
from contextlab.engine import Message
from contextlab.hermes_texts import SYNTHETIC_FLAGS, is_real_user_message, row_text
from contextlab.messages import clone_messages

SUMMARY_KEY = hermes_texts.SUMMARY_KEY
INFLIGHT_MERGED_KEY = "_inflight_replay_merged"
"""A summary row the in-flight ask was restated onto: the ask survives in it."""
DB_PERSISTED_KEY = "_db_persisted"


def ensure_user_turn(compacted: list[Message], before: list[Message]) -> list[Message]:
    """``compacted`` (a committed compaction of ``before``), with a real user turn restored when none
    survived: a copy of the newest real user ask of ``before`` placed by :func:`insert_anchor`, or,
    when ``before`` held none either, the continuation marker appended. Returns ``compacted`` itself
    when it already holds one (or the in-flight ask restated onto its summary)."""
    if any(is_real_user_message(m) or m.get(INFLIGHT_MERGED_KEY) for m in compacted):
        return compacted
    out = list(compacted)
    latest = next((m for m in reversed(before) if is_real_user_message(m)), None)
    if latest is None:
        out.append({"role": "user", "content": hermes_texts.CONTINUATION_USER[0]})
        return out
    # A copy without the persistence marker, as upstream (deep: no content shared with the old row).
    anchor = clone_messages([{k: v for k, v in latest.items() if k != DB_PERSISTED_KEY}])[0]
    insert_anchor(out, anchor)
    return out


def insert_anchor(messages: list[Message], anchor: Message) -> None:
    """Put the restored ask into ``messages`` (in place) without two user rows in a row: before the
    first assistant row not preceded by a user row (the summary boundary, usually); else at the end
    when the list does not end on a user row, or ends on a summary (never merged into: its prefix
    must open its row); else folded into the trailing user-role scaffolding, the ask's words first."""
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and (index == 0 or messages[index - 1].get("role") != "user"):
            messages.insert(index, anchor)
            return
    if not messages or messages[-1].get("role") != "user":
        messages.append(anchor)
        return
    if hermes_texts.classify_summary_content(row_text(messages[-1])) is not None:
        messages.append(anchor)
        return
    messages[-1] = _merged_into(messages[-1], anchor)


def _merged_into(target: Message, anchor: Message) -> Message:
    """``target`` (user-role scaffolding) with the ask's content first and the synthetic flags gone.
    A new row: the host's rows are never edited in place."""
    ask, own = anchor.get("content"), target.get("content")
    content: object
    if isinstance(ask, list) or isinstance(own, list):
        content = _parts(ask) + _parts(own)
    else:
        content = f"{ask or ''}\n\n{own or ''}".strip()
    merged = {k: v for k, v in target.items() if k not in SYNTHETIC_FLAGS}
    merged["content"] = content
    return merged


def _parts(content: object) -> list[object]:
    return list(content) if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
