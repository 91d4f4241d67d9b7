"""The in-flight task restated after the compaction boundary (upstream ``_find_inflight_user_task``,
``_reappend_inflight_user_task``, #100818): when the newest real user ask is still unanswered and
would sit before the summary, a copy under a fixed header follows the surviving tail, or is merged
onto the summary row when the list already ends on a visible user row."""

from __future__ import annotations

from contextlab import hermes_texts as texts
from contextlab.engine import Message
from contextlab.engines.compressor import assembly
from contextlab.messages import content_text

MERGED_KEY = "_inflight_replay_merged"


def find(messages: list[Message]) -> Message | None:
    """The newest real user turn still awaiting its answer (the whole history is scanned)."""
    last = -1
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        # The fork's test: user input (``_is_actionable_user_turn``) in the user's own words
        # (``_is_real_user_message``: no runtime scaffolding such as a todo snapshot or a nudge).
        if (assembly.is_actionable_user(message) and texts.is_real_user_message(message)) or message.get(MERGED_KEY):
            last = i
            break
    if last < 0:
        return None
    for message in reversed(messages[last + 1 :]):
        if message.get("role") != "assistant" or message.get("tool_calls"):
            break  # a trailing tool row or pending calls: still mid-task
        if content_text(message).strip():
            return None  # already answered
    return messages[last]


def reappend(compressed: list[Message], task: Message | None) -> list[Message]:
    """Restate ``task`` after the handoff unless a real request already follows it."""
    if task is None or not compressed:
        return compressed
    carrier = next((i for i in range(len(compressed) - 1, -1, -1) if assembly.is_handoff(compressed[i])), -1)
    if carrier < 0 or any(assembly.is_real_user_turn(m) for m in compressed[carrier + 1 :]):
        return compressed
    carrier_text = content_text(compressed[carrier])
    if texts.END_MARKER not in carrier_text or carrier_text.split(texts.END_MARKER, 1)[1].strip():
        return compressed
    body = content_text(task).strip()
    if texts.INFLIGHT_HEADER in body:
        body = body.rsplit(texts.INFLIGHT_HEADER, 1)[1].strip()
    if not body:
        return compressed
    last_visible = next((r for r in (assembly.visible_role(m) for m in reversed(compressed)) if r is not None), None)
    out = list(compressed)
    if last_visible == "user":
        row = out[carrier]
        content = row.get("content")
        addition = f"\n\n{texts.INFLIGHT_HEADER}\n{body}"
        new_content: object = (
            [*content, {"type": "text", "text": addition}]
            if isinstance(content, list)
            else f"{content or ''}{addition}"
        )
        out[carrier] = {
            **{k: v for k, v in row.items() if k != "api_content"},
            "content": new_content,
            MERGED_KEY: True,
        }
        return out
    if task.get(MERGED_KEY):
        replay: Message = {"role": "user", "content": body}
    else:
        replay = {k: v for k, v in task.items() if k not in ("_db_persisted", assembly.TAIL_KEY, "api_content")}
    content = replay.get("content")
    if isinstance(content, list):
        replay["content"] = [{"type": "text", "text": texts.INFLIGHT_HEADER + "\n"}, *content]
    else:
        replay["content"] = f"{texts.INFLIGHT_HEADER}\n{body}"
    out.append(replay)
    return out
