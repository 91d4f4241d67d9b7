"""Render a request into cache blocks in provider order (tools → system → messages) and hash them.

A block is what a provider caches at: one tool schema, one system part, one message content part,
one tool call or one tool result. Each block keeps its exact token count, its size as sent and a
digest of what is sent (text as it is, JSON values by an injective encoding that keeps key order:
providers hash what they receive, caching.md A17; ``contextlab.cache.sent_form``). A block carries nothing
about where it sits, so a message's blocks are the same objects wherever an engine moves it; the
request knows which message each block belongs to (:meth:`RenderedRequest.message_of`). Prefix keys
(``contextlab.cache.prefix_keys``) name everything up to and including each block.

Token counts are never recomputed here: a message's exact count comes from the host
(``RequestView.message_tokens``) and is shared among the message's blocks in proportion to their
sizes, with the remainder on the last block, so every message total stays exact. Rendering is
memoized per message object (the host keeps unchanged wire messages as the same objects) and per
content, so a long replay renders each message once, for every provider profile in the run; a row
an engine moves or selects again costs C-level work (``docs/performance.md``).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, count, islice
from operator import and_, attrgetter, eq, itemgetter, ne, not_
from typing import Any, NamedTuple, cast

from contextlab.cache.prefix_keys import extend_keys
from contextlab.cache.sent_form import sent_form
from contextlab.engine import Message
from contextlab.messages import freeze, tool_calls

RUN_KINDS = frozenset({"tool_use", "tool_result"})
"""Kinds whose consecutive runs count as one lookback position (caching.md A6)."""
_HASH_SIZE = 16
_SMALL = 8  # below this many rows or blocks, plain loops beat the C-level set-up
_KIND, _TOKENS, _CHARS, _DIGEST = (itemgetter(i) for i in (2, 4, 5, 6))  # fields of a Block
_ROW_TOKENS, _ROW_BLOCKS = attrgetter("tokens"), attrgetter("blocks")


class Block(NamedTuple):
    """One cacheable unit of a request: what it is, not where it is (a message's blocks are shared
    by every request that sends the message at the same token count; the request maps blocks to
    messages, :meth:`RenderedRequest.message_of`).

    Attributes:
        section: ``tools``, ``system`` or ``messages``.
        role: Message role (``tool`` for tool schemas, ``system`` for the unseen prefix).
        kind: ``tool``, ``overhead``, ``text``, ``image``, ``tool_use``, ``tool_result``, ``thinking``.
        part: Index of the part inside its message, or of the tool schema (tool calls follow the
            content parts).
        tokens: Exact tokens attributed to this block.
        chars: Characters of the block as sent (for character-based prefix models).
        digest: Digest of the block's bytes as sent.
    """

    section: str
    role: str
    kind: str
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
        hashes: ``hashes[i]`` = the prefix key of blocks ``0..i`` (``prefix_keys``).
        position_of: For each block, the index of its lookback position (runs of tool_use or of
            tool_result blocks share one position).
        positions: For each position, the block index that ends it.
        total_tokens: Whole-request tokens (blocks plus framing the blocks do not carry).
        overhead_tokens: Tokens of the unseen fixed prefix block (0 if none).
        message_ends: For each message, the index of its last block (every message has one, so
            the list is strictly increasing).
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

    def message_of(self, block: int) -> int:
        """Index of the message that block ``block`` belongs to (-1: a tool schema, -2: the unseen
        prefix)."""
        if block < self.messages_start:
            return -1 if self.blocks[block].section == "tools" else -2
        return bisect_left(self.message_ends, block)

    def message_start(self, message: int) -> int:
        """Index of the first block of message ``message``."""
        return self.message_ends[message - 1] + 1 if message > 0 else self.messages_start


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_HASH_SIZE)
    for part in parts:
        h.update(part)
    return h.digest()


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


class _Row:
    """A message's rendering, kept by object identity: its parts, and its blocks at the token
    count it was last sent with (the same block objects wherever the message goes)."""

    __slots__ = ("blocks", "message", "parts", "role", "tokens")

    def __init__(self, message: Message, parts: tuple[_Part, ...], role: str) -> None:
        self.message = message  # a reference: the id cannot be reused while the row is memoized
        self.parts = parts
        self.role = role
        self.tokens = -1
        self.blocks: list[Block] = []

    def place(self, tokens: int) -> list[Block]:
        """The blocks sharing ``tokens`` (rebuilt only if the count changed)."""
        if tokens != self.tokens:
            self.blocks = _spread(self.parts, tokens, "messages", self.role)
            self.tokens = tokens
        return self.blocks


class BlockRenderer:
    """Renders requests into blocks; memoizes per message object and per message content.

    One renderer serves every profile of a replay, so several providers never re-render or re-hash.
    """

    def __init__(self) -> None:
        # Rows by message identity, in two generations: a row seen recently stays (an engine that
        # selects rows sends many of the last requests' rows again, in other places), and the
        # memo pins a bounded number of messages (``_rotate``).
        self._rows: dict[int, _Row] = {}
        self._older: dict[int, _Row] = {}
        # The first message (the system prompt, possibly split): message, split, tokens, parts, blocks.
        self._first: tuple[Message, int | None, int, tuple[_Part, ...], list[Block]] | None = None
        self._by_content: dict[Any, tuple[_Part, ...]] = {}
        self._tools_memo: dict[Any, tuple[_Part, ...]] = {}
        self._tools_last: tuple[list[dict[str, Any]], tuple[_Part, ...]] | None = None
        self._previous: RenderedRequest | None = None

    def _message_parts(self, message: Message, system_split: int | None) -> tuple[_Part, ...]:
        key = (freeze(message), system_split)
        parts = self._by_content.get(key)
        if parts is None:
            role = str(message.get("role") or "")
            role_bytes = role.encode()
            built = []
            for kind, value, counted in _content_parts(role, message, system_split):
                if isinstance(value, str):  # text goes as it is, not as a JSON literal
                    data = value.encode("utf-8", "replace")
                    size, pieces = len(data), [data]
                else:
                    size, pieces = sent_form(value)
                built.append(_Part(kind, size, _digest(role_bytes, b"\x00", kind.encode(), b"\x00", *pieces), counted))
            if not built:
                # A message with nothing in it still occupies the conversation (role framing).
                built.append(_Part("text", 0, _digest(role_bytes, b"\x00empty"), True))
            parts = tuple(built)
            self._by_content[key] = parts
        return parts

    def _row(self, message: Message) -> _Row:
        """The memoized row of a message not in the current generation (older one, else rendered)."""
        key = id(message)
        row = self._older.get(key)
        if row is None or row.message is not message:
            row = _Row(message, self._message_parts(message, None), str(message.get("role") or ""))
        self._rows[key] = row
        return row

    def _first_blocks(self, message: Message, tokens: int, system_split: int | None) -> list[Block]:
        """Blocks of the request's first message (the only one that can be split or be ``system``)."""
        first = self._first
        if first is not None and first[0] is message and first[1] == system_split:
            if first[2] == tokens:
                return first[4]
            parts = first[3]
        else:
            parts = self._message_parts(message, system_split if message.get("role") == "system" else None)
        role = str(message.get("role") or "")
        section = "system" if role in ("system", "developer") else "messages"
        built = _spread(parts, tokens, section, role)
        self._first = (message, system_split, tokens, parts, built)
        return built

    def _rotate(self, rows: int) -> None:
        # A new generation once the current one holds twice as many rows as can come back (the
        # request, or the history it was selected from): a row unseen for a whole generation is
        # dropped, so the memo pins at most ~4x max(rows, 512) messages, most of them the
        # history's own (alive anyway).
        if len(self._rows) > 2 * max(rows, 512):
            self._older, self._rows = self._rows, {}

    def _tool_parts(self, tools: list[dict[str, Any]]) -> tuple[_Part, ...]:
        last = self._tools_last
        if last is not None and last[0] is tools:
            return last[1]
        key = freeze(tools)
        parts = self._tools_memo.get(key)
        if parts is None:
            forms = map(sent_form, tools)
            parts = tuple(_Part("tool", size, _digest(b"tool\x00", *pieces), True) for size, pieces in forms)
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
        history_rows: int = 0,
    ) -> RenderedRequest:
        """Blocks of one request.

        Args:
            messages: Final wire messages, system first (any sequence that can be sliced).
            message_tokens: Exact tokens of each message (likewise).
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
            history_rows: How many rows the request's messages were selected from (the working
                history): the memo keeps that many recently seen rows, so an engine that moves or
                re-selects older rows costs a lookup per row, not a rendering.
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
                blocks.extend(_spread(tool_parts, tools_tokens, "tools", "tool"))
            if overhead_tokens > 0:
                digest = _digest(b"overhead\x00", str(overhead_tokens).encode())
                blocks.append(Block("system", "system", "overhead", 0, overhead_tokens, 0, digest))
            start, message_ends = 0, []
        messages_start = len(blocks) if start == 0 else (previous.messages_start if previous else 0)
        shared_blocks = len(blocks)
        if start == 0 and len(messages):
            blocks.extend(self._first_blocks(messages[0], message_tokens[0], system_split))
            message_ends.append(len(blocks) - 1)
            start = 1
        self._place_rows(messages[start:], message_tokens[start : len(messages)], blocks, message_ends)
        rendered = self._cumulate(blocks, overhead_tokens, total_tokens, shared_blocks if head else None)
        rendered.message_ends = message_ends
        rendered.key = (tool_parts, tools_tokens, overhead_tokens, system_split)
        rendered.messages_start = messages_start
        self._rotate(max(len(messages), history_rows))
        return rendered

    def _place_rows(
        self, messages: Sequence[Message], tokens: Sequence[int], blocks: list[Block], message_ends: list[int]
    ) -> None:
        """Append the blocks of ``messages`` and where each message ends.

        A row seen recently costs C-level work only (a lookup, and its very blocks appended: an
        engine that selects rows moves most of them every request); only objects not in the memo,
        or whose token count changed, cost Python-level work.
        """
        if len(tokens) != len(messages):
            raise ValueError(f"{len(messages)} messages but {len(tokens)} token counts")
        if len(messages) <= _SMALL:
            self._place_few(messages, tokens, blocks, message_ends)
            return
        found = list(map(self._rows.get, map(id, messages)))
        if None in found:
            # Rows not in the current generation: found one by one (``index`` is C-level).
            miss = found.index(None)
            while True:
                found[miss] = self._row(messages[miss])
                try:
                    miss = found.index(None, miss + 1)
                except ValueError:
                    break
        # No identity check needed: a row in the current generation pins its message, so no other
        # object can have its id (``_row`` checks the older generation's).
        rows = cast(list[_Row], found)
        # A new row, or a row whose count changed, (re)computes its shares; the others' blocks are
        # taken as they are (a reshuffled request has a few such rows among hundreds). The rows to
        # place are found first: one object may occur twice, at two counts.
        lists = list(map(_ROW_BLOCKS, rows))
        for i in list(compress(count(), map(ne, map(_ROW_TOKENS, rows), tokens))):
            lists[i] = rows[i].place(tokens[i])
        counts = list(map(len, lists))
        blocks.extend(chain.from_iterable(lists))
        message_ends.extend(islice(accumulate(counts, initial=len(blocks) - 1 - sum(counts)), 1, None))

    def _place_few(
        self, messages: Sequence[Message], tokens: Sequence[int], blocks: list[Block], message_ends: list[int]
    ) -> None:
        """:meth:`_place_rows` for a few rows (an appended turn), one row at a time."""
        rows = self._rows
        for message, tokens_sent in zip(messages, tokens, strict=True):
            row = rows.get(id(message)) or self._row(message)
            blocks.extend(row.place(tokens_sent))
            message_ends.append(len(blocks) - 1)

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
        # The new blocks' running sums, keys and positions. Keys chain (``H[i]`` hashes ``H[i-1]``
        # and block ``i``'s digest), so every block after the shared part gets a new key; the
        # sums and the kind lookups run at C level.
        new = blocks[shared:]
        kinds = list(map(_KIND, new))
        if len(new) > _SMALL:
            cum_tokens.extend(islice(accumulate(map(_TOKENS, new), initial=running_tokens), 1, None))
            cum_chars.extend(islice(accumulate(map(_CHARS, new), initial=running_chars), 1, None))
            running_tokens = cum_tokens[-1]
            _extend_positions(kinds, blocks[shared - 1].kind if shared else None, shared, positions, position_of)
        else:  # a few blocks (an appended turn): a plain loop costs less than the C-level set-up
            previous_kind = blocks[shared - 1].kind if shared else None
            for i, block in enumerate(new, shared):
                running_tokens += block.tokens
                running_chars += block.chars
                cum_tokens.append(running_tokens)
                cum_chars.append(running_chars)
                kind = block.kind
                if kind == previous_kind and kind in RUN_KINDS:
                    positions[-1] = i
                else:
                    positions.append(i)
                position_of.append(len(positions) - 1)
                previous_kind = kind
        extend_keys(hashes, list(map(_DIGEST, new)))
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
            first = shared + kinds.index("image") if "image" in kinds else -1
        rendered.first_image = first
        rendered.has_images = first >= 0
        self._previous = rendered
        return rendered


def _extend_positions(
    kinds: list[str], before: str | None, start: int, positions: list[int], position_of: list[int]
) -> None:
    """Lookback positions of blocks ``start...`` of kinds ``kinds`` (``before``: the kind of block
    ``start - 1``), at C level: a block continues a position if it and the block before it are
    both tool_use or both tool_result, and a position ends at its last block."""
    continues = list(map(and_, map(eq, kinds, chain((before,), kinds)), map(RUN_KINDS.__contains__, kinds)))
    starts = list(map(not_, continues))
    # Position of each block: the last one so far plus the starts up to it.
    position_of.extend(islice(accumulate(starts, initial=len(positions) - 1), 1, None))
    ends = list(compress(range(start, start + len(kinds)), chain(islice(starts, 1, None), (True,))))
    if continues[0]:
        positions[-1] = ends.pop(0)  # the first block extends the previous request's last run
    positions.extend(ends)


def _spread(parts: tuple[_Part, ...], tokens: int, section: str, role: str) -> list[Block]:
    """Blocks for ``parts`` sharing ``tokens`` in proportion to their sizes (exact total)."""
    if len(parts) == 1:
        p = parts[0]
        return [Block(section, role, p.kind, 0, tokens, p.chars, p.digest)]
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
        out.append(Block(section, role, p.kind, i, share, p.chars, p.digest))
    return out


def is_markable(block: Block) -> bool:
    """Whether a cache marker may sit on this block (not thinking, not empty text)."""
    return block.kind not in ("thinking",) and not (block.kind == "text" and block.chars == 0)
