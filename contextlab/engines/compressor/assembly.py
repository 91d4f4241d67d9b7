"""Assembling the compacted list: head, summary (standalone or merged), tail, then sanitation
(``host-contract.md`` §2d steps 4 and 7; upstream ``compress`` phase 4 and ``_sanitize_tool_pairs``).

Every text comes from :mod:`contextlab.hermes_texts` (the host's bytes, with their upstream source).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlab import hermes_texts as texts
from contextlab.engine import Message
from contextlab.messages import content_text, tool_calls

SUMMARY_PREFIX = texts.SUMMARY_PREFIX
HANDOFF_PREFIXES: tuple[str, ...] = texts.ALL_PREFIXES
"""The current prefix, the legacy one and every historical one, in the host's match order."""
END_MARKER = texts.END_MARKER
PRIOR_OPEN = texts.PRIOR_HEADER
PRIOR_CLOSE = texts.PRIOR_DELIMITER
SYSTEM_NOTE = texts.SYSTEM_NOTE
TOOL_CALL_REMOVED = texts.TOOL_CALL_REMOVED
IMAGE_STRIPPED = texts.IMAGE_STRIPPED
SUMMARY_KEY = texts.SUMMARY_KEY
HAS_USER_KEY = "_compressed_summary_has_user_turn"
TAIL_KEY = "_compaction_tail"
"""Newer upstream tags every carried-forward tail row with it; never sent, but the rough estimator counts it."""
_IMAGE_TYPES = ("image_url", "image", "input_image")


# --------------------------------------------------------------------------- recognising handoffs


classify = texts.classify_summary_content


def is_handoff(message: Message) -> bool:
    """A summary an earlier compaction wrote: by metadata key or by content (any prefix generation)."""
    if message.get(SUMMARY_KEY):
        return True
    return classify(content_text(message)) is not None


def strip_summary_prefix(text: str, *, cut_at_marker: bool = True) -> str:
    """The summary body: merged prior content, the (first matching) prefix and the end marker removed.

    ``cut_at_marker``: everything from the end marker on goes (a handoff merged into the user row after
    it carries that row's text there). Off, as 0.19.0's ``_strip_summary_prefix``: the marker goes only
    when the text ends with it, so a merged row's text stays in the body."""
    body = (text or "").strip()
    if PRIOR_CLOSE in body:
        body = body.split(PRIOR_CLOSE, 1)[1].strip()
    for prefix in HANDOFF_PREFIXES:  # current first, then legacy, then historical newest first
        if body.startswith(prefix):
            body = body[len(prefix) :].lstrip()
            break
    if not cut_at_marker:
        return body[: -len(END_MARKER)].rstrip() if body.endswith(END_MARKER) else body
    at = body.find(END_MARKER)
    return body[:at].rstrip() if at >= 0 else body


def with_summary_prefix(body: str) -> str:
    """The host's normalized handoff text: current prefix, newline, body."""
    stripped = strip_summary_prefix(body)
    return f"{SUMMARY_PREFIX}\n{stripped}" if stripped else SUMMARY_PREFIX


@dataclass(frozen=True)
class Unwrapped:
    """A handoff split into its summary body and the genuine message content merged with it (if any)."""

    summary: str
    genuine: str | None


def unwrap_handoff(message: Message) -> Unwrapped:
    """Separate the summary from the real content of a (possibly merged) handoff message."""
    text = content_text(message)
    genuine: str | None = None
    if PRIOR_CLOSE in text:
        prior = text.split(PRIOR_CLOSE, 1)[0].strip()
        if prior.startswith(PRIOR_OPEN):
            prior = prior[len(PRIOR_OPEN) :].lstrip()
        genuine = prior or None
    elif END_MARKER in text:
        genuine = text.split(END_MARKER, 1)[1].lstrip() or None
    return Unwrapped(strip_summary_prefix(text), genuine)


def is_blank_user(message: Message) -> bool:
    """An empty user row that is not a summary (upstream ``_is_blank_user_turn``): content None or
    whitespace, an empty list, or a list of only whitespace strings and whitespace text parts. An
    image, audio or any other part is the user's input, so such a row is not blank."""
    if message.get("role") != "user" or message.get(SUMMARY_KEY):
        return False
    content = message.get("content")
    if classify(content_text(message)) is not None:
        return False
    if content is None or (isinstance(content, str) and not content.strip()):
        return True
    if not isinstance(content, list):
        return False
    for part in content:
        if isinstance(part, str):
            if part.strip():
                return False
            continue
        if isinstance(part, dict) and part.get("type") in ("text", "input_text"):
            text = part.get("text")
            if isinstance(text, str) and not text.strip():
                continue
        return False
    return True


def is_actionable_user(message: Message) -> bool:
    """User input worth anchoring (upstream ``_is_actionable_user_turn``): a user row that is not a
    summary (by key or content, merged ones too) and not blank."""
    if message.get("role") != "user" or is_handoff(message):
        return False
    return not is_blank_user(message)


def is_synthetic_user(message: Message) -> bool:
    """A user-role row the compaction machinery wrote (upstream ``_is_synthetic_compression_user_turn``):
    a summary (by key or content), a continuation marker, or the re-injected todo snapshot."""
    if message.get("role") != "user":
        return False
    if is_handoff(message):
        return True
    text = content_text(message).strip()
    return text in texts.CONTINUATION_USER or text.startswith(texts.TODO_HEADER + "\n")


def is_real_user_turn(message: Message) -> bool:
    """A real user turn: actionable and not synthetic (upstream ``_find_last_user_message_idx`` and
    ``_ensure_last_n_user_messages_in_tail`` of ``0000416b``)."""
    return is_actionable_user(message) and not is_synthetic_user(message)


def is_user_anchor_0_19_0(message: Message) -> bool:
    """0.19.0's tail anchor: any user row whose content is not a summary (no metadata, blank,
    marker or scaffolding check)."""
    return message.get("role") == "user" and classify(content_text(message)) is None


# --------------------------------------------------------------------------- role choice and merge


def visible_role(message: Message) -> str | None:
    """The role a strict alternation template counts: tool rows and assistant tool-call rows are exempt."""
    role = message.get("role")
    if role == "tool" or (role == "assistant" and message.get("tool_calls")):
        return None
    return str(role) if role is not None else None


def visible_neighbours(head: list[Message], tail: list[Message]) -> tuple[str | None, str | None, int]:
    """Newer upstream ``_summary_placement``'s neighbours: the head's last visible role (``"user"`` for
    an empty head, None when only exempt rows), the tail's first visible role and its index (0 if none)."""
    last_head: str | None = "user"
    if head:
        last_head = next((r for r in (visible_role(m) for m in reversed(head)) if r is not None), None)
    first = next(((i, r) for i, r in enumerate(visible_role(m) for m in tail) if r is not None), None)
    return (last_head, first[1], first[0]) if first else (last_head, None, 0)


@dataclass(frozen=True)
class SummaryPlacement:
    """How the summary enters the list: its role, a merge into a tail row (and which), forced user."""

    role: str
    merge: bool
    forced_user: bool
    merge_index: int = 0


def choose_placement(
    last_head_role: str | None,
    first_tail_role: str | None,
    *,
    forced_user: bool,
    has_tail: bool,
    first_tail_index: int = 0,
) -> SummaryPlacement:
    """Upstream's role choice in ``compress``: ``user`` after an assistant/tool head (or a head of exempt
    rows only, role None) or when forced, else ``assistant``; flip to avoid the first tail row's role
    unless that collides with the head (or the role is forced), in which case the summary merges into
    the first tail row (a forced merge into ``first_tail_index``, the first visible one)."""
    role = "user" if last_head_role in (None, "assistant", "tool") or forced_user else "assistant"
    merge = False
    if first_tail_role is not None and role == first_tail_role:
        flipped = "assistant" if role == "user" else "user"
        if flipped != last_head_role and last_head_role is not None and not forced_user:
            role = flipped
        else:
            merge = has_tail
    return SummaryPlacement(role, merge, forced_user, first_tail_index if forced_user else 0)


def summary_message(summary: str, role: str, has_user_turn: bool | None) -> Message:
    """A standalone handoff row: the prefixed summary, a blank line, the end marker, metadata keys
    (``has_user_turn`` None: the key is not written, as in 0.19.0)."""
    row: Message = {"role": role, "content": f"{summary}\n\n{END_MARKER}", SUMMARY_KEY: True}
    if has_user_turn is not None:
        row[HAS_USER_KEY] = has_user_turn
    return row


def _add_text(content: object, text: str, *, prepend: bool) -> object:
    if content is None:
        return text
    if isinstance(content, list):
        block = {"type": "text", "text": text}
        return [block, *content] if prepend else [*content, block]
    rendered = content if isinstance(content, str) else str(content)
    return text + rendered if prepend else rendered + text


def merge_into(message: Message, summary: str, placement: SummaryPlacement, has_user_turn: bool | None) -> Message:
    """A tail row with the (prefixed) summary merged in, as upstream ``_merge_summary_into_tail_row``."""
    old = message.get("content", "")
    if placement.forced_user and placement.role == "user":
        content = _add_text(old, f"{summary}\n\n{END_MARKER}\n\n", prepend=True)
    else:
        suffix = f"\n\n{PRIOR_CLOSE}\n\n{summary}\n\n{END_MARKER}"
        content = _add_text(_add_text(old, suffix, prepend=False), PRIOR_OPEN + "\n", prepend=True)
    merged = {k: v for k, v in message.items() if k != "api_content"}  # the sidecar no longer matches
    merged["content"] = content
    merged[SUMMARY_KEY] = True
    if has_user_turn is not None:
        merged[HAS_USER_KEY] = has_user_turn
    return merged


def annotate_system(head: list[Message]) -> list[Message]:
    """Append the compaction note to a leading system message once."""
    if not head or head[0].get("role") != "system":
        return head
    existing = head[0].get("content")
    if SYSTEM_NOTE in content_text(head[0]):
        return head
    sep = "\n\n" if isinstance(existing, str) and existing else ""
    return [{**head[0], "content": _add_text(existing, sep + SYSTEM_NOTE, prepend=False)}, *head[1:]]


def strip_handoff_row(message: Message) -> Message | None:
    """Upstream ``_strip_context_summary_handoff_message``: None for a standalone handoff, the genuine
    content for a merged one, a copy otherwise."""
    if not is_handoff(message):
        return dict(message)
    genuine = unwrap_handoff(message).genuine
    if not genuine:
        return None
    out = {k: v for k, v in message.items() if k != SUMMARY_KEY}
    out["content"] = genuine
    return out


# --------------------------------------------------------------------------- sanitation


def sanitize_tool_pairs(messages: list[Message], *, keep_inflight: bool = False) -> list[Message]:
    """Drop tool results whose call is gone; strip calls whose result is gone (no stubs injected).

    Pairing is judged per tool group (an assistant's calls and the tool rows right after it) rather
    than by id over the whole list as upstream does: identical when ids are unique, and still valid
    when a transcript reuses call ids (``docs/compressor.md``). ``keep_inflight`` (newer upstream,
    #79278): the last non-tool row, when it is an assistant, may still be waiting for its results, so
    its calls are kept verbatim.
    """
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") != "tool"), -1)
    inflight = last if keep_inflight and last >= 0 and messages[last].get("role") == "assistant" else -1
    answered_by_group: dict[int, set[str]] = {}
    owner = -1
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if owner >= 0:
                answered_by_group[owner].add(str(m.get("tool_call_id") or ""))
            continue
        owner = i if tool_calls(m) else -1
        if owner >= 0:
            answered_by_group[owner] = set()
    out: list[Message] = []
    live_ids: set[str] = set()
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if str(m.get("tool_call_id") or "") in live_ids:
                out.append(m)
            continue
        calls = tool_calls(m)
        answered = answered_by_group.get(i, set())
        if calls and i != inflight and any(str(c.get("id") or "") not in answered for c in calls):
            live = [c for c in calls if str(c.get("id") or "") in answered]
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            if live:
                m["tool_calls"] = live
            elif not content_text(m).strip():
                m["content"] = TOOL_CALL_REMOVED
            calls = live
        live_ids = {str(c.get("id") or "") for c in calls}
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
