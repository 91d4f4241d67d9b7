"""OpenAI-format messages: wire form, identity (uids), structural validation and request sanitizers.

Everything here follows the host (``host-contract.md`` §5 request assembly, §7 identity). The
per-message transforms are pure functions of a message's content, so :class:`WireCache` can memoize
them by content: a replay computes the wire form of each distinct message once.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from contextlab.engine import Message
from contextlab.reasoning import WIRE_DROPPED_KEYS, is_thinking_only, wire_reasoning
from contextlab.tool_arguments import sent_arguments

PERSISTENCE_ONLY_MESSAGE_FIELDS: frozenset[str] = frozenset(
    {
        "timestamp",
        "display_kind",
        "display_metadata",
        "_row_id",
        "_merged_turn_prefix",
        "message_uid",
        "_absorbed_message_uids",
        "_tool_call_uids",
        "_tool_call_uid",
        "_db_row_snapshot",
        "_canonical_row",
    }
)
"""Fields the host persists but never sends (and never counts)."""

PRIVATE_RECOVERY_MESSAGE_FIELDS: frozenset[str] = frozenset(
    {"_length_continuation_fragment", "_length_continuation_nudge", "_tool_call_truncation_nudge"}
)

ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
_ROLE_ALIASES = {"developer": "system"}


# --------------------------------------------------------------------------- content helpers


def content_text(message: Message) -> str:
    """The text of a message's content: a string as is, text parts joined with newlines."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def tool_calls(message: Message) -> list[dict[str, Any]]:
    """The ``tool_calls`` of an assistant message (empty list when absent or malformed)."""
    calls = message.get("tool_calls")
    if not calls:  # most rows: no list to filter
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def tool_call_name(call: dict[str, Any]) -> str:
    fn = call.get("function")
    return str(fn.get("name", "")) if isinstance(fn, dict) else str(call.get("name", ""))


def tool_call_arguments(call: dict[str, Any]) -> str:
    fn = call.get("function")
    args = fn.get("arguments", "") if isinstance(fn, dict) else call.get("arguments", "")
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True)


def is_empty(message: Message) -> bool:
    """No text, no parts and no tool calls."""
    content = message.get("content")
    has_content = bool(content.strip()) if isinstance(content, str) else bool(content)
    return not has_content and not tool_calls(message)


def freeze(value: Any) -> Any:
    """A hashable, content-equal key for a JSON-like value.

    Cheap on repeated calls: ``str`` objects cache their hash and compare by identity first, so
    freezing a message whose strings were already seen costs O(nodes), not O(characters).
    """
    if isinstance(value, dict):
        return ("d", tuple((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("l", tuple(freeze(v) for v in value))
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return ("r", repr(value))


def clone_messages(messages: Iterable[Message]) -> list[Message]:
    """A structural clone: new dicts and lists all the way down, strings shared (they are immutable)."""
    return [_clone(m) for m in messages]


_CONTAINERS = (dict, list)  # a tuple: isinstance with ``dict | list`` is a third slower


def _clone(value: Any) -> Any:
    # Leaves (strings, numbers) are shared without a call per value: most of a message's values are.
    if isinstance(value, dict):
        return {k: _clone(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) if isinstance(v, _CONTAINERS) else v for v in value]
    return value


# --------------------------------------------------------------------------- identity


class UidMinter:
    """Mints ``message_uid`` values (32 hex, uuid4-shaped) deterministically from a seed."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(f"contextlab-uid-{seed}")

    def new(self) -> str:
        # What ``uuid.UUID(int=n, version=4).hex`` gives, without building a UUID object per row.
        n = self._rng.getrandbits(128)
        n = (n & _UUID4_CLEAR) | _UUID4_SET
        return f"{n:032x}"


_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)
"""The RFC 4122 variant and version-4 bits (as ``uuid.UUID(..., version=4)`` sets them)."""


def deterministic_tool_call_id(name: str, arguments: str, index: int) -> str:
    """The host's provider-facing id for an id-less call: ``call_`` + sha256("name:args:index")[:12]."""
    digest = hashlib.sha256(f"{name}:{arguments}:{index}".encode()).hexdigest()
    return f"call_{digest[:12]}"


def stamp_identity(messages: list[Message], minter: UidMinter, start: int = 0) -> None:
    """Give rows without one a ``message_uid``, and pair tool-call uids onto calls and results.

    Follows the host's rules: calls repeating a provider id inside one response share one uid;
    a result takes the uid of the matching call in the nearest preceding assistant message.
    Messages are modified in place (this is the host's "first insert"). Rows before ``start`` are
    already stamped; only the calls of the assistant message nearest before it are looked up.
    """
    # The calls open at ``start`` (the nearest assistant before it, across tool rows) are looked up
    # only when a new tool row needs them: an appended assistant row or user row does not.
    open_calls: dict[str, str | list[str]] | None = None
    for i in range(start, len(messages)):
        message = messages[i]
        if not message.get("message_uid"):
            message["message_uid"] = minter.new()
        role = message.get("role")
        if role == "assistant":
            calls = tool_calls(message)
            if calls:
                uids = message.get("_tool_call_uids")
                if not isinstance(uids, dict):
                    uids = {}
                    for call in calls:
                        call_id = str(call.get("id", ""))
                        if call_id and call_id not in uids:
                            uids[call_id] = minter.new()
                    message["_tool_call_uids"] = uids
                open_calls = uids  # read only below: no copy
        elif role == "tool" and "_tool_call_uid" not in message:
            if open_calls is None:
                open_calls = _open_calls_before(messages, start)
            uid = open_calls.get(str(message.get("tool_call_id", "")))
            if isinstance(uid, list):
                uid = uid[0] if uid else None
            if uid:
                message["_tool_call_uid"] = uid


def _open_calls_before(messages: list[Message], start: int) -> dict[str, str | list[str]]:
    """The call uids of the assistant row nearest before ``start`` across tool rows (else none)."""
    for j in range(start - 1, -1, -1):
        earlier = messages[j]
        role = earlier.get("role")
        if role == "assistant":
            found = earlier.get("_tool_call_uids")
            return found if isinstance(found, dict) else {}
        if role != "tool":
            break
    return {}


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class Violation:
    """A structural problem in a message list, at message ``index``."""

    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.rule}: {self.detail}"


def validate_messages(messages: list[Message]) -> list[Violation]:
    """Every structural violation a provider would reject, in message order (empty list: valid).

    Rules: ``unknown_role``, ``empty_message``, ``leading_tool_message``, ``tool_without_call_id``,
    ``orphan_tool_result``, ``duplicate_tool_result``, ``out_of_order_tool_result``,
    ``unanswered_tool_call``.
    """
    tracker = StructureTracker()
    for message in messages:
        tracker.feed(message)
    return tracker.violations()


class StructureTracker:
    """The structural state of a message list, fed one message at a time.

    A replay's history only grows between compactions, so the host feeds each new row once instead
    of re-validating the whole request every time. :attr:`needs_sanitizing` says whether the
    request sanitizers would change anything (so an unchanged request skips them).
    """

    def __init__(self) -> None:
        self._found: list[Violation] = []
        self._pending: dict[str, int] = {}  # call id -> index of the assistant that made it
        self._answered: set[str] = set()
        self._earlier_calls: set[str] = set()
        self._seen_non_system = False
        self._previous_user_text = False
        self._count = 0
        self.rewrites = False
        """A thinking-only assistant row or two adjacent user rows: the sanitizers rewrite the list."""

    @property
    def needs_sanitizing(self) -> bool:
        return self.rewrites or bool(self._found) or any(c not in self._answered for c in self._pending)

    def violations(self) -> list[Violation]:
        """Violations so far, including calls of the open group that are still unanswered."""
        open_calls = [
            Violation(at, "unanswered_tool_call", f"tool call {call_id!r} has no result")
            for call_id, at in self._pending.items()
            if call_id not in self._answered
        ]
        return self._found + open_calls

    def _close_group(self) -> None:
        pending = self._pending
        if pending:  # the group's unanswered calls become violations (no copy of the earlier ones)
            answered = self._answered
            self._found.extend(
                Violation(at, "unanswered_tool_call", f"tool call {call_id!r} has no result")
                for call_id, at in pending.items()
                if call_id not in answered
            )
            self._earlier_calls.update(pending)
            pending.clear()
        self._answered.clear()

    def feed(self, message: Message) -> None:
        i = self._count
        self._count += 1
        found = self._found
        if not isinstance(message, dict):
            found.append(Violation(i, "unknown_role", f"not a message object: {type(message).__name__}"))
            return
        role = message.get("role")
        if role not in ROLES:
            found.append(Violation(i, "unknown_role", f"role {role!r}"))
            return
        is_user_text = role == "user" and isinstance(message.get("content"), str)
        if is_user_text and self._previous_user_text:
            self.rewrites = True
        self._previous_user_text = is_user_text
        if role == "tool":
            self._feed_tool(i, message)
            return
        self._close_group()
        if role != "system":
            self._seen_non_system = True
        if role == "assistant" and is_thinking_only(message):
            self.rewrites = True  # the host may drop it from the request (judged on the wire form)
        if is_empty(message):
            found.append(Violation(i, "empty_message", f"{role} message with no content"))
        if role == "assistant":
            for call in tool_calls(message):
                call_id = str(call.get("id") or "")
                if not call_id:
                    found.append(Violation(i, "unanswered_tool_call", "tool call without an id"))
                elif call_id not in self._pending:
                    self._pending[call_id] = i

    def _feed_tool(self, i: int, message: Message) -> None:
        found = self._found
        if not self._seen_non_system:
            found.append(Violation(i, "leading_tool_message", "the history starts with a tool result"))
        self._seen_non_system = True
        call_id = message.get("tool_call_id")
        if not call_id:
            found.append(Violation(i, "tool_without_call_id", "tool message without tool_call_id"))
        elif call_id in self._pending:
            if call_id in self._answered:
                found.append(Violation(i, "duplicate_tool_result", f"second result for {call_id!r}"))
            self._answered.add(call_id)
        elif call_id in self._earlier_calls:
            found.append(Violation(i, "out_of_order_tool_result", f"result for {call_id!r} after another message"))
        else:
            found.append(Violation(i, "orphan_tool_result", f"no tool call with id {call_id!r}"))


# --------------------------------------------------------------------------- wire form & sanitizers


def wire_message(message: Message, echo_reasoning: bool = False) -> Message:
    """The provider-facing copy: persistence-only and underscore fields stripped, ``api_content`` applied,
    reasoning shaped for the route (``echo_reasoning``: :mod:`contextlab.reasoning`), string content
    stripped, tool-call argument JSON canonical (or repaired), lone surrogates replaced."""
    out: Message = {key: value for key, value in message.items() if key not in _NOT_SENT and not key.startswith("_")}
    role = _ROLE_ALIASES.get(str(out.get("role")), out.get("role"))
    out["role"] = role
    if role == "assistant":
        if "tool_calls" in out and not (isinstance(out["tool_calls"], list) and out["tool_calls"]):
            del out["tool_calls"]  # strict providers reject an empty array; the host drops the key
        carried, reasoning = wire_reasoning(message, echo_reasoning)
        if carried:
            out["reasoning_content"] = reasoning
        else:
            out.pop("reasoning_content", None)
    api_content = message.get("api_content")
    if role in ("user", "assistant") and isinstance(api_content, str) and api_content:
        out["content"] = api_content
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = content.strip()
    calls = tool_calls(out)
    if calls:
        out["tool_calls"] = [_canonical_call(_without_responses_ids(c)) for c in calls]
    for key, value in out.items():  # last, as the host does: after the argument JSON is rewritten
        if type(value) is str:
            if not value.isascii():  # O(1): the common case costs no call
                out[key] = strip_surrogates(value)
        elif isinstance(value, (dict, list)):
            out[key] = without_surrogates(value)
    return out


_NOT_SENT = PERSISTENCE_ONLY_MESSAGE_FIELDS | PRIVATE_RECOVERY_MESSAGE_FIELDS | {"api_content"} | WIRE_DROPPED_KEYS

TRANSPORT_DROPPED_KEYS = frozenset({"tool_name", "effect_disposition", "codex_reasoning_items", "codex_message_items"})
"""Row keys the chat-completions transport drops as the request leaves (``NousResearch/hermes-agent``
``agent/transports/chat_completions.py`` @``001a4e55``, ``convert_messages``): after the host's
estimates, which count them, and before the provider, which never sees them."""
_CALL_KEYS_DROPPED = ("call_id", "response_item_id", "extra_content")
"""Tool-call keys the transport drops: Responses ids, and Gemini's thought signature (the last)."""

_RESPONSES_IDS = _CALL_KEYS_DROPPED[:2]


def _without_responses_ids(call: Any) -> Any:
    """``call`` without the Responses ids the host keeps on its rows: the request copy of a
    chat-completions route drops them before the host estimates it (``_sanitize_tool_calls_for_strict_api``
    in ``build_api_messages``, ``NousResearch/hermes-agent`` ``agent/turn_context.py`` @``0041c5c0``;
    0.19.0 ``agent/conversation_loop.py``)."""
    if isinstance(call, dict) and not call.keys().isdisjoint(_RESPONSES_IDS):
        return {key: value for key, value in call.items() if key not in _RESPONSES_IDS}
    return call


def keeps_thought_signatures(model: str) -> bool:
    """The transport keeps a tool call's ``extra_content`` (Gemini's thought signature) only for a
    Gemini-family model (upstream ``_model_consumes_thought_signature``)."""
    name = model.lower()
    return "gemini" in name or "gemma" in name


def transport_form(wire: Message, thought_signatures: bool = False) -> Message:
    """``wire`` as the transport sends it: :data:`TRANSPORT_DROPPED_KEYS` dropped, and the Responses
    ids (and, unless ``thought_signatures``, ``extra_content``) dropped from its tool calls. ``wire``
    itself when it holds none of them (nearly every row)."""
    out: Message | None = None
    if not TRANSPORT_DROPPED_KEYS.isdisjoint(wire):
        out = {key: value for key, value in wire.items() if key not in TRANSPORT_DROPPED_KEYS}
    calls = wire.get("tool_calls")
    if isinstance(calls, list):
        dropped = _CALL_KEYS_DROPPED[:2] if thought_signatures else _CALL_KEYS_DROPPED
        if any(isinstance(call, dict) and any(key in call for key in dropped) for call in calls):
            out = dict(wire) if out is None else out
            out["tool_calls"] = [
                {k: v for k, v in call.items() if k not in dropped} if isinstance(call, dict) else call
                for call in calls
            ]
    return wire if out is None else out


def _canonical_call(call: dict[str, Any]) -> dict[str, Any]:
    """``call`` with its argument string as the host sends it (:func:`sent_arguments`); a call whose
    arguments are not a string (never so in a host's history) is left as it is."""
    fn = call.get("function")
    if not isinstance(fn, dict):
        return call
    args = fn.get("arguments")
    if not isinstance(args, str):
        return call
    sent = sent_arguments(args)
    if sent == args:
        return call
    return {**call, "function": {**fn, "arguments": sent}}


_SURROGATE = re.compile("[\ud800-\udfff]")


def strip_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (a code point UTF-8 cannot encode, e.g. half of an emoji a
    tool cut) replaced by U+FFFD, as the host's outbound sanitizer does; ``text`` itself when it has none."""
    if text.isascii():  # O(1): most texts
        return text
    try:
        text.encode("utf-8")  # the fastest test for one (a copy at C speed, twice a regex search's rate)
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def without_surrogates(value: Any) -> Any:
    """:func:`strip_surrogates` of every string in ``value`` (dicts and lists walked, keys kept); the
    same object where nothing changed. The host sweeps a request's every string field this way
    (content and content-part text, names, tool-call ids, names and arguments, reasoning fields)."""
    if isinstance(value, str):
        return strip_surrogates(value)
    if not isinstance(value, (dict, list)):
        return value
    swept: Any = None  # a copy of ``value``, made at the first item that changes
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        if type(item) is str and item.isascii():
            continue  # O(1): most items
        new = without_surrogates(item)
        if new is not item:
            if swept is None:
                swept = value.copy()
            swept[key] = new
    return value if swept is None else swept


class WireCache:
    """Memoizes :func:`wire_message` by message content, so unchanged messages keep one wire object.

    Keeping the same object request after request makes downstream memos (token counts, prefix
    comparison, block hashes) identity-fast.
    """

    def __init__(self) -> None:
        self._memo: dict[Any, Message] = {}

    def wire(self, message: Message) -> Message:
        key = freeze(message)
        hit = self._memo.get(key)
        if hit is None:
            hit = wire_message(message)
            self._memo[key] = hit
        return hit


def sanitize_request(messages: list[Message]) -> list[Message]:
    """List-level request sanitizers in the host's order.

    Role allowlist; orphaned tool results dropped and unanswered tool calls answered with the host's
    stub results; thinking-only assistant messages dropped; adjacent user messages merged (the first
    keeps its uid, the others are recorded in ``_absorbed_message_uids``). Messages that need no
    change are returned as the same objects. (The replay host keeps the same result up to date row by row:
    :class:`contextlab.host.sanitized.IncrementalSanitizer`.)
    """
    answered: set[str] = set()
    called: set[str] = set()
    for m in messages:
        answers, calls = row_call_ids(m)
        answered.update(answers)
        called.update(calls)
    kept: list[Message] = []
    for m in messages:
        row = sanitize_row(m, answered, called)
        if row is None:
            continue
        kept.append(row)
        if row.get("role") == "assistant":
            kept.extend(unanswered_call_stubs(row, answered))
    return list(_merge_adjacent_users(kept))


def row_call_ids(message: Message) -> tuple[list[str], list[str]]:
    """The tool-result id a row answers (as a list) and the call ids it makes, as the sanitizers see
    them; a row the role allowlist drops contributes none."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return [], []
    call_id = message.get("tool_call_id") if message.get("role") == "tool" else None
    answers = [str(call_id)] if call_id else []
    return answers, [str(c.get("id", "")) for c in tool_calls(message)]


def sanitize_row(message: Message, answered: set[str], called: set[str]) -> Message | None:
    """One row after the role allowlist, the orphan-result rule and the thinking-only rule (None:
    dropped), given every tool-result id (``answered``) and call id (``called``) of the request.
    An assistant row keeps its unanswered calls: :func:`unanswered_call_stubs` answers them."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return None
    if message.get("role") == "tool":
        call_id = message.get("tool_call_id")
        return message if call_id and str(call_id) in called else None
    return None if is_thinking_only(message) else message


def unanswered_call_stubs(message: Message, answered: set[str]) -> list[Message]:
    """The host's stand-in results for an assistant row's calls no tool row of the request answers,
    sent right after the row, in call order (0.19.0 and newer upstream ``sanitize_api_messages``:
    the request copy is never sent with a call left open, and the call itself is kept)."""
    stubs: list[Message] = []
    for call in tool_calls(message):
        call_id = str(call.get("id", ""))
        if call_id and call_id not in answered:
            name = tool_call_name(call)
            stubs.append(
                {
                    "role": "tool",
                    "name": name if name.strip() else "invalid_tool_call",
                    "content": _stub_text(),
                    "tool_call_id": call_id,
                }
            )
    return stubs


def _stub_text() -> str:
    from contextlab import hermes_texts  # read once, when a request first needs a stub

    return hermes_texts.text("stub_tool_result")


def is_user_text(message: Message) -> bool:
    """A user row with string content: the rows the adjacent-user merge folds together."""
    return message.get("role") == "user" and isinstance(message.get("content"), str)


def _merge_adjacent_users(messages: list[Message]) -> Iterator[Message]:
    pending: Message | None = None
    for m in messages:
        if m.get("role") == "user" and pending is not None and isinstance(m.get("content"), str):
            pending = merge_user_messages(pending, m)
            continue
        if pending is not None:
            yield pending
        pending = m if m.get("role") == "user" and isinstance(m.get("content"), str) else None
        if pending is None:
            yield m
    if pending is not None:
        yield pending


def merge_user_messages(first: Message, second: Message) -> Message:
    """Fold ``second`` into ``first`` as the host does: text joined, first uid kept, others absorbed."""
    merged = dict(first)
    before, after = content_text(first), content_text(second)
    merged["content"] = (
        f"{before}\n\n{after}" if before and after else before or after
    )  # no separator for an empty side
    absorbed = list(first.get("_absorbed_message_uids") or [])
    if second.get("message_uid"):
        absorbed.append(second["message_uid"])
    absorbed.extend(second.get("_absorbed_message_uids") or [])
    if absorbed:
        merged["_absorbed_message_uids"] = absorbed
    return merged
