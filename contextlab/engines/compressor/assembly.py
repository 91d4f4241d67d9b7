"""Assembling the compacted list: head, summary (standalone or merged), tail, then sanitation
(``host-contract.md`` §2d steps 4 and 7).

The marker texts below carry the host's structure and key phrases. The host's exact
``SUMMARY_PREFIX`` wording is not in the reference; ours is written for contextlab and starts with
the same recognisable tag, and every historical prefix in :data:`HANDOFF_PREFIXES` is recognised.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlab.engine import Message
from contextlab.messages import content_text, tool_calls

SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns of this conversation were compacted into the "
    "handoff summary below. It is background from a previous context window, not a new instruction: "
    "requests it mentions were already handled. Respond only to the newest message after this summary."
)
HANDOFF_PREFIXES: tuple[str, ...] = (
    "[CONTEXT COMPACTION — REFERENCE ONLY]",
    "[CONTEXT COMPACTION]",
    "[CONTEXT SUMMARY — REFERENCE ONLY]",
    "[CONTEXT SUMMARY]:",
)
"""The current prefix tag and the historical ones an earlier compaction may have written."""
END_MARKER = "\n\n--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
PRIOR_OPEN = "[PRIOR CONTEXT — for reference only; not a new message]"
PRIOR_CLOSE = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
SYSTEM_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a handoff summary to preserve "
    "context space. Build on the summary and the current state instead of redoing earlier work.]"
)
TOOL_CALL_REMOVED = "(tool call removed)"
IMAGE_STRIPPED = "[Attached image — stripped after compression]"
_IMAGE_TYPES = ("image_url", "image", "input_image")


# --------------------------------------------------------------------------- recognising handoffs


def is_handoff(message: Message) -> bool:
    """A summary an earlier compaction wrote: by metadata key, by prefix, or merged into a message."""
    if message.get("_compressed_summary"):
        return True
    text = content_text(message).lstrip()
    return text.startswith(HANDOFF_PREFIXES) or text.startswith(PRIOR_OPEN)


def _strip_prefix(text: str) -> str:
    body = text.lstrip()
    if body.startswith(SUMMARY_PREFIX):
        return body[len(SUMMARY_PREFIX) :].lstrip("\n")
    for prefix in HANDOFF_PREFIXES:
        if body.startswith(prefix):
            rest = body[len(prefix) :]
            # A historical prefix may be followed by prose up to the first line break.
            if "\n" in rest and not rest.startswith("\n"):
                rest = rest.split("\n", 1)[1]
            return rest.lstrip("\n ")
    return body


@dataclass(frozen=True)
class Unwrapped:
    """A handoff split into its summary body and the genuine message content merged with it (if any)."""

    summary: str
    genuine: str | None


def unwrap_handoff(message: Message) -> Unwrapped:
    """Separate the summary from the real content of a (possibly merged) handoff message."""
    text = content_text(message)
    stripped = text.lstrip()
    if stripped.startswith(PRIOR_OPEN):
        inner = stripped[len(PRIOR_OPEN) :]
        genuine, _, rest = inner.partition(PRIOR_CLOSE)
        summary, _, after = rest.partition(END_MARKER)
        return Unwrapped(_strip_prefix(summary.strip("\n")).strip(), genuine.strip("\n") + after.lstrip("\n"))
    head, marker, tail = text.partition(END_MARKER)
    body = _strip_prefix(head).strip()
    return Unwrapped(body, tail.lstrip("\n") if marker and tail.strip() else None)


def is_actionable_user(message: Message) -> bool:
    """A user message carrying a genuine ask: not a pure handoff (a merged one counts), not blank."""
    if message.get("role") != "user" or message.get("_compressed_summary"):
        return False
    if is_handoff(message):
        genuine = unwrap_handoff(message).genuine
        return bool(genuine and genuine.strip())
    return bool(content_text(message).strip())


# --------------------------------------------------------------------------- role choice and merge


@dataclass(frozen=True)
class SummaryPlacement:
    """How the summary enters the list: its role, or a merge into the first tail message."""

    role: str
    merge: bool
    forced_user: bool


def choose_placement(head: list[Message], tail: list[Message], compress_start: int) -> SummaryPlacement:
    """The host's role choice: forced user at the start (or after a system head, or when no user
    would survive), user after assistant/tool, else assistant; flip on a collision with the tail,
    merge when the flip would collide with the head or the role is forced."""
    last_head = head[-1].get("role") if head else None
    survivors = [m for m in [*head, *tail] if m.get("role") == "user"]
    forced = compress_start == 0 or last_head == "system" or not survivors
    role = "user" if forced or last_head in ("assistant", "tool") else "assistant"
    first_tail = tail[0].get("role") if tail else None
    if first_tail == role:
        flipped = "assistant" if role == "user" else "user"
        if forced or flipped == last_head:
            return SummaryPlacement(role, True, forced)
        return SummaryPlacement(flipped, False, forced)
    return SummaryPlacement(role, False, forced)


def summary_message(body: str, role: str, has_user_turn: bool) -> Message:
    """A standalone handoff message (prefix, body, end marker, metadata keys)."""
    return {
        "role": role,
        "content": f"{SUMMARY_PREFIX}\n{body}{END_MARKER}",
        "_compressed_summary": True,
        "_compressed_summary_has_user_turn": has_user_turn,
    }


def merge_into(message: Message, body: str, forced_user: bool) -> Message:
    """The first tail message with the summary merged in (its identity keys are kept)."""
    original = content_text(message)
    if forced_user:
        content = f"{SUMMARY_PREFIX}\n{body}{END_MARKER}\n\n{original}"
    else:
        content = f"{PRIOR_OPEN}\n{original}\n{PRIOR_CLOSE}\n{SUMMARY_PREFIX}\n{body}{END_MARKER}"
    merged = {k: v for k, v in message.items() if k != "api_content"}  # the sidecar no longer matches
    merged["content"] = content
    return merged


def annotate_system(head: list[Message]) -> list[Message]:
    """Append the compaction note to a leading system message once."""
    if not head or head[0].get("role") != "system":
        return head
    text = content_text(head[0])
    if SYSTEM_NOTE in text:
        return head
    return [{**head[0], "content": f"{text}\n\n{SYSTEM_NOTE}"}, *head[1:]]


# --------------------------------------------------------------------------- sanitation


def sanitize_tool_pairs(messages: list[Message]) -> list[Message]:
    """Drop tool results whose call is gone; strip calls whose result is gone (no stubs injected)."""
    called: set[str] = set()
    answered: set[str] = set()
    for m in messages:
        for call in tool_calls(m):
            called.add(str(call.get("id") or ""))
        if m.get("role") == "tool":
            answered.add(str(m.get("tool_call_id") or ""))
    out: list[Message] = []
    for m in messages:
        if m.get("role") == "tool":
            if str(m.get("tool_call_id") or "") in called:
                out.append(m)
            continue
        calls = tool_calls(m)
        if calls and any(str(c.get("id") or "") not in answered for c in calls):
            live = [c for c in calls if str(c.get("id") or "") in answered]
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            if live:
                m["tool_calls"] = live
            elif not content_text(m).strip():
                m["content"] = TOOL_CALL_REMOVED
        out.append(m)
    return out


def strip_old_images(messages: list[Message]) -> list[Message]:
    """Replace image parts before the newest image-bearing user message with a fixed marker."""

    def has_image(m: Message) -> bool:
        content = m.get("content")
        return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in _IMAGE_TYPES for p in content)

    newest = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user" and has_image(messages[i])),
        None,
    )
    if newest is None:
        return messages
    out = list(messages)
    for i in range(newest):
        if has_image(out[i]):
            content = out[i]["content"]
            out[i] = {
                **out[i],
                "content": [
                    {"type": "text", "text": IMAGE_STRIPPED}
                    if isinstance(p, dict) and p.get("type") in _IMAGE_TYPES
                    else p
                    for p in content
                ],
            }
    return out


def strip_persisted_flags(messages: list[Message]) -> list[Message]:
    """Remove ``_db_persisted`` from every message (the rows are new after a compaction)."""
    return [{k: v for k, v in m.items() if k != "_db_persisted"} if "_db_persisted" in m else m for m in messages]
