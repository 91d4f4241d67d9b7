"""Render a request into cache blocks in provider order (tools → system → messages) and hash them.

A block is what a provider caches at: one tool schema, one system part, one message content part,
one tool call or one tool result. Each block keeps its exact token count and a digest of the bytes
as sent (key order kept: providers hash what they receive, caching.md A17). Cumulative hashes make a
prefix key: ``H[i]`` names everything up to and including block ``i``.

Token counts are never recomputed here: a message's exact count comes from the host
(``RequestView.message_tokens``) and is shared among the message's blocks in proportion to their
sizes, with the remainder on the last block, so every message total stays exact. Rendering is
memoized per message object (the host keeps unchanged wire messages as the same objects) and per
content, so a long replay renders each message once, for every provider profile in the run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from contextlab.engine import Message
from contextlab.messages import freeze, tool_calls

RUN_KINDS = frozenset({"tool_use", "tool_result"})
"""Kinds whose consecutive runs count as one lookback position (caching.md A6)."""
_HASH_SIZE = 16


class Block(NamedTuple):
    """One cacheable unit of a request.

    A named tuple of plain values: the garbage collector stops tracking such tuples, and a long
    replay holds thousands of blocks (``docs/performance.md``).

    Attributes:
        section: ``tools``, ``system`` or ``messages``.
        role: Message role (``tool`` for tool schemas, ``system`` for the unseen prefix).
        kind: ``tool``, ``overhead``, ``text``, ``image``, ``tool_use``, ``tool_result``, ``thinking``.
        message: Index of the message in the request (-1: a tool schema, -2: the unseen prefix).
        part: Index of the part inside the message (tool calls follow the content parts).
        tokens: Exact tokens attributed to this block.
        chars: Characters of the block as sent (for character-based prefix models).
        digest: Digest of the block's bytes as sent.
    """

    section: str
    role: str
    kind: str
    message: int
    part: int
    tokens: int
    chars: int
    digest: bytes


class _Part(NamedTuple):
    kind: str
    chars: int
    digest: bytes
    counted: bool  # False: the host's token count leaves this part out (``reasoning_content``)


@dataclass
class RenderedRequest:
    """A request as blocks, with cumulative tokens and hashes and the lookback positions.

    When the next request a renderer renders extends this one (shares all its messages), the
    renderer appends to these very lists instead of copying them, so a request costs its new
    blocks, not its length. A request is therefore current until its renderer renders the next
    one; whoever keeps a request's lists past that keeps their length too (the stores and profiles
    do: ``docs/performance.md``). The first ``len`` entries of a list never change.

    Attributes:
        blocks: Blocks in provider order.
        cum_tokens: ``cum_tokens[i]`` = tokens of blocks ``0..i``.
        cum_chars: ``cum_chars[i]`` = characters of blocks ``0..i``.
        hashes: ``hashes[i]`` = cumulative hash of blocks ``0..i`` (the prefix key).
        position_of: For each block, the index of its lookback position (runs of tool_use or of
            tool_result blocks share one position).
        positions: For each position, the block index that ends it.
        total_tokens: Whole-request tokens (blocks plus framing the blocks do not carry).
        overhead_tokens: Tokens of the unseen fixed prefix block (0 if none).
        message_ends: For each message, the index of its last block (-1 if it has none).
        has_images: Some block is an image.
        key: What the blocks before the messages depend on (tools, overhead, system split).
        messages_start: Index of the first message block.
        first_image: Index of the first image block (-1: none).
    """

    blocks: list[Block]
    cum_tokens: list[int]
    cum_chars: list[int]
    hashes: list[bytes]
    position_of: list[int]
    positions: list[int]
    total_tokens: int
    overhead_tokens: int
    message_ends: list[int]
    has_images: bool = False
    key: Any = None
    messages_start: int = 0
    first_image: int = -1

    def __len__(self) -> int:
        return len(self.blocks)


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_HASH_SIZE)
    for part in parts:
        h.update(part)
    return h.digest()


def _as_sent(value: Any) -> bytes:
    # No sort_keys: key order is part of what the provider hashes.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")


def _content_parts(role: str, message: Message, system_split: int | None) -> list[tuple[str, Any, bool]]:
    """(kind, value-as-sent, counted) for each block of one message, in render order.

    ``counted`` is False for a ``reasoning_content`` string: it is hashed (it is part of what a
    provider replays) but the exact counter does not count it, so it gets no share of the tokens.
    """
    content = message.get("content")
    parts: list[tuple[str, Any, bool]] = []
    if role == "tool":
        # One tool_result block: the result plus the id it answers (both are sent).
        parts.append(("tool_result", [message.get("tool_call_id"), content], True))
        return parts
    if isinstance(content, str):
        if role == "system" and system_split is not None and 0 < system_split < len(content):
            parts.append(("text", content[:system_split], True))
            parts.append(("text", content[system_split:], True))
        elif content:
            parts.append(("text", content, True))
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                kind = str(part.get("type") or "text")
                if kind in ("image_url", "input_image", "image"):
                    kind = "image"
                elif kind in ("thinking", "redacted_thinking", "reasoning"):
                    kind = "thinking"
                elif kind not in ("tool_use", "tool_result"):
                    kind = "text"
                value = {k: v for k, v in part.items() if k != "cache_control"}
                parts.append((kind, value, True))
            elif isinstance(part, str) and part:
                parts.append(("text", part, True))
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if role == "assistant" and isinstance(reasoning, str) and reasoning:
        parts.insert(0, ("thinking", reasoning, False))  # not in the host's exact count
    for call in tool_calls(message):
        parts.append(("tool_use", call, True))
    return parts


class BlockRenderer:
    """Renders requests into blocks; memoizes per message object and per message content.

    One renderer serves every profile of a replay, so several providers never re-render or re-hash.
    """

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Message, int | None, tuple[_Part, ...]]] = {}
        # Blocks of a message at a given position and token count: unchanged messages in an
        # append-only history hit this every request, so a request costs a dict lookup per message.
        self._blocks: dict[int, tuple[Message, int, int, int | None, list[Block]]] = {}
        self._by_content: dict[Any, tuple[_Part, ...]] = {}
        self._tools_memo: dict[Any, tuple[_Part, ...]] = {}
        self._tools_last: tuple[list[dict[str, Any]], tuple[_Part, ...]] | None = None
        self._previous: RenderedRequest | None = None

    def _message_parts(self, message: Message, system_split: int | None) -> tuple[_Part, ...]:
        hit = self._by_id.get(id(message))
        if hit is not None and hit[0] is message and hit[1] == system_split:
            return hit[2]
        key = (freeze(message), system_split)
        parts = self._by_content.get(key)
        if parts is None:
            role = str(message.get("role") or "")
            role_bytes = role.encode()
            built = []
            for kind, value, counted in _content_parts(role, message, system_split):
                sent = value if isinstance(value, str) else _as_sent(value)
                data = sent.encode("utf-8", "replace") if isinstance(sent, str) else sent
                built.append(
                    _Part(kind, len(data), _digest(role_bytes, b"\x00", kind.encode(), b"\x00", data), counted)
                )
            if not built:
                # A message with nothing in it still occupies the conversation (role framing).
                built.append(_Part("text", 0, _digest(role_bytes, b"\x00empty"), True))
            parts = tuple(built)
            self._by_content[key] = parts
        # Keep a reference to the message so its id cannot be reused while memoized.
        self._by_id[id(message)] = (message, system_split, parts)
        return parts

    def _tool_parts(self, tools: list[dict[str, Any]]) -> tuple[_Part, ...]:
        last = self._tools_last
        if last is not None and last[0] is tools:
            return last[1]
        key = freeze(tools)
        parts = self._tools_memo.get(key)
        if parts is None:
            parts = tuple(_Part("tool", len(data), _digest(b"tool\x00", data), True) for data in map(_as_sent, tools))
            self._tools_memo[key] = parts
        self._tools_last = (tools, parts)
        return parts

    def render(
        self,
        messages: Sequence[Message],
        message_tokens: Sequence[int],
        tools: list[dict[str, Any]],
        tools_tokens: int,
        *,
        overhead_tokens: int = 0,
        total_tokens: int | None = None,
        system_split: int | None = None,
        shared_messages: int = 0,
    ) -> RenderedRequest:
        """Blocks of one request.

        Args:
            messages: Final wire messages, system first.
            message_tokens: Exact tokens of each message.
            tools: Tool schemas sent with the request.
            tools_tokens: Exact tokens of all tool schemas together.
            overhead_tokens: An unseen fixed prefix (system prompt and tool schemas the recording
                omits); rendered as one leading system block so it is cached like the real one.
            total_tokens: The whole prompt (framing included); default: the sum of the blocks.
            system_split: Split the leading system message at this character offset (the host's
                static/volatile system boundary).
            shared_messages: How many leading messages are the previous request's (the host knows:
                ``RequestView.prefix_messages``). Their blocks, cumulative tokens and hashes are
                reused, so a request costs its new messages, not its length (``docs/performance.md``).
        """
        tool_parts = self._tool_parts(tools) if tools else ()
        previous = self._previous
        head: list[Block] = []
        message_ends: list[int] = []
        start = 0
        if (
            previous is not None
            and shared_messages > 0
            and previous.key == (tool_parts, tools_tokens, overhead_tokens, system_split)
        ):
            start = min(shared_messages, len(previous.message_ends), len(messages))
            if 0 < start == len(previous.message_ends):
                # This request extends the previous one: its lists grow in place (no copy); the
                # previous request is superseded (see ``RenderedRequest``).
                message_ends = previous.message_ends
                head = previous.blocks
            else:
                message_ends = previous.message_ends[:start]
                end = message_ends[-1] + 1 if message_ends else previous.messages_start
                head = previous.blocks[:end]
        blocks: list[Block] = head
        if not head:
            if tool_parts:
                blocks.extend(_spread(tool_parts, tools_tokens, "tools", "tool", -1))
            if overhead_tokens > 0:
                digest = _digest(b"overhead\x00", str(overhead_tokens).encode())
                blocks.append(Block("system", "system", "overhead", -2, 0, overhead_tokens, 0, digest))
            start, message_ends = 0, []
        messages_start = len(blocks) if start == 0 else (previous.messages_start if previous else 0)
        shared_blocks = len(blocks)
        memo = self._blocks
        for index in range(start, len(messages)):
            message, tokens = messages[index], message_tokens[index]
            hit = memo.get(id(message))
            if (
                hit is not None
                and hit[0] is message
                and hit[1] == index
                and hit[2] == tokens
                and (index or hit[3] == system_split)
            ):
                blocks.extend(hit[4])
            else:
                role = str(message.get("role") or "")
                split = system_split if index == 0 and role == "system" else None
                parts = self._message_parts(message, split)
                section = "system" if role in ("system", "developer") and index == 0 else "messages"
                built = _spread(parts, tokens, section, role, index)
                memo[id(message)] = (message, index, tokens, system_split, built)
                blocks.extend(built)
            message_ends.append(len(blocks) - 1)
        rendered = self._cumulate(blocks, overhead_tokens, total_tokens, shared_blocks if head else None)
        rendered.message_ends = message_ends
        rendered.key = (tool_parts, tools_tokens, overhead_tokens, system_split)
        rendered.messages_start = messages_start
        if len(memo) > 2 * max(len(messages), 64) or len(self._by_id) > 2 * max(len(messages), 64):
            # Only the messages of the latest request can hit again: drop the rest, so the memos
            # never keep dropped messages alive (amortised O(1) per message).
            live = {id(m) for m in messages}
            self._blocks = {k: v for k, v in memo.items() if k in live}
            self._by_id = {k: v for k, v in self._by_id.items() if k in live}
        return rendered

    def _cumulate(
        self, blocks: list[Block], overhead: int, total: int | None, known_shared: int | None = None
    ) -> RenderedRequest:
        n = len(blocks)
        # Reuse the previous request's hashes over the shared leading blocks: appending turns cost
        # O(new blocks) in hashing, not O(request).
        previous = self._previous
        shared = 0
        positions: list[int] = []
        running_tokens = running_chars = 0
        if previous is not None:
            if known_shared is not None:
                shared = min(known_shared, len(previous.blocks))
            else:
                limit = min(n, len(previous.blocks))
                old = previous.blocks
                while shared < limit and (old[shared] is blocks[shared] or old[shared] == blocks[shared]):
                    shared += 1
        if shared and previous is not None and shared == len(previous.hashes):
            # The previous request is the whole shared part: extend its lists in place.
            hashes, cum_tokens, cum_chars = previous.hashes, previous.cum_tokens, previous.cum_chars
            position_of, positions = previous.position_of, previous.positions
            running_tokens = cum_tokens[shared - 1]
            running_chars = cum_chars[shared - 1]
        elif shared and previous is not None:
            # Everything about the shared leading blocks is what the previous request computed.
            hashes = previous.hashes[:shared]
            cum_tokens = previous.cum_tokens[:shared]
            cum_chars = previous.cum_chars[:shared]
            position_of = previous.position_of[:shared]
            last_position = position_of[shared - 1]
            positions = previous.positions[: last_position + 1]
            positions[-1] = shared - 1  # a run may have continued past the shared part
            running_tokens = cum_tokens[shared - 1]
            running_chars = cum_chars[shared - 1]
        else:
            hashes, cum_tokens, cum_chars, position_of = [], [], [], []
        last_hash = hashes[-1] if hashes else b""
        for i in range(shared, n):
            block = blocks[i]
            running_tokens += block.tokens
            running_chars += block.chars
            cum_tokens.append(running_tokens)
            cum_chars.append(running_chars)
            last_hash = _digest(last_hash, block.digest)
            hashes.append(last_hash)
            if i and block.kind in RUN_KINDS and blocks[i - 1].kind == block.kind:
                positions[-1] = i
            else:
                positions.append(i)
            position_of.append(len(positions) - 1)
        rendered = RenderedRequest(
            blocks=blocks,
            cum_tokens=cum_tokens,
            cum_chars=cum_chars,
            hashes=hashes,
            position_of=position_of,
            positions=positions,
            total_tokens=max(total if total is not None else running_tokens, running_tokens),
            overhead_tokens=overhead,
            message_ends=[],
        )
        first = previous.first_image if shared and previous is not None else -1
        if not 0 <= first < shared:
            first = next((i for i in range(shared, n) if blocks[i].kind == "image"), -1)
        rendered.first_image = first
        rendered.has_images = first >= 0
        self._previous = rendered
        return rendered


def _spread(parts: tuple[_Part, ...], tokens: int, section: str, role: str, message: int) -> list[Block]:
    """Blocks for ``parts`` sharing ``tokens`` in proportion to their sizes (exact total)."""
    if len(parts) == 1:
        p = parts[0]
        return [Block(section, role, p.kind, message, 0, tokens, p.chars, p.digest)]
    total_chars = sum(p.chars for p in parts if p.counted) or len(parts)
    last_counted = max((i for i, p in enumerate(parts) if p.counted), default=len(parts) - 1)
    out: list[Block] = []
    given = 0
    for i, p in enumerate(parts):
        if not p.counted and i != last_counted:
            share = 0
        elif i == last_counted:
            share = tokens - given
        else:
            share = tokens * (p.chars or 1) // total_chars
        given += share
        out.append(Block(section, role, p.kind, message, i, share, p.chars, p.digest))
    return out


def is_markable(block: Block) -> bool:
    """Whether a cache marker may sit on this block (not thinking, not empty text)."""
    return block.kind not in ("thinking",) and not (block.kind == "text" and block.chars == 0)
