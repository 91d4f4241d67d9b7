"""Cache-control placement policies, applied last, to the final request, on request-local copies.

A policy looks at the rendered request (blocks, lookback positions) and returns at most four
:class:`Marker`s; :func:`apply_policy` also materializes them as ``cache_control`` fields on copies
of the messages and tools, the way the host sends them (``host-contract.md`` §4). Policies never
mark thinking blocks or empty text (caching.md A4).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from contextlab.cache.blocks import BlockRenderer, RenderedRequest, is_markable
from contextlab.cache.profiles import Marker
from contextlab.engine import Message
from contextlab.errors import ConfigError
from contextlab.messages import content_text, tool_calls
from contextlab.registry import Registry, subclass_of

MAX_MARKERS = 4


class Policy(ABC):
    """Where the cache markers go. Stateless: the same request always gets the same markers."""

    name = ""

    def __init__(self, ttl: str = "5m") -> None:
        if ttl not in ("5m", "1h"):
            raise ConfigError(f"cache policy {self.name}: ttl must be 5m or 1h, got {ttl!r}")
        self.ttl = ttl

    def system_split(self, system_text: str) -> int | None:
        """Character offset to split the system message at (the static/volatile boundary), or None."""
        return None

    @abstractmethod
    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        """Markers for this request (at most four, on markable blocks)."""

    def _mark(self, blocks: list[int]) -> list[Marker]:
        unique = sorted(set(b for b in blocks if b >= 0))
        return (
            [Marker(b, self.ttl) for b in unique[-MAX_MARKERS:]]
            if len(unique) > MAX_MARKERS
            else [Marker(b, self.ttl) for b in unique]
        )


# ---------------------------------------------------------------------- block helpers


def system_end(request: RenderedRequest) -> int:
    """Last markable block of the system section (the unseen prefix counts), else -1."""
    found = -1
    for i, block in enumerate(request.blocks):
        if block.section == "messages":
            break
        if block.section == "system" and is_markable(block):
            found = i
    return found


def last_markable(request: RenderedRequest, upto: int | None = None) -> int:
    """The last markable block at or before ``upto`` (automatic caching walks back, A16)."""
    i = len(request.blocks) - 1 if upto is None else upto
    while i >= 0 and not is_markable(request.blocks[i]):
        i -= 1
    return i


def message_marker_block(request: RenderedRequest, index: int) -> int:
    """Where the host puts a message's marker: the last content part, else the message's last block."""
    end = request.message_ends[index]  # every message has a block
    i, first = end, request.message_start(index)
    while i >= first:
        block = request.blocks[i]
        if block.kind not in ("tool_use", "thinking") and is_markable(block):
            return i
        i -= 1
    return end if is_markable(request.blocks[end]) else -1


def eligible(message: Message, *, tool_part_markers: bool = True) -> bool:
    """The host's rule: empty assistant rows (pure tool calls) and empty tool rows get no marker."""
    role = message.get("role")
    if role == "system":
        return False
    if role == "tool" and not tool_part_markers:
        return False
    content = message.get("content")
    has_text = bool(content_text(message).strip()) if content is not None else False
    return role not in ("assistant", "tool") or has_text


# ---------------------------------------------------------------------- policies


class NoCaching(Policy):
    """No markers: nothing is ever written (Anthropic, OpenAI explicit mode)."""

    name = "none"

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        return []


class Automatic(Policy):
    """Anthropic top-level automatic caching: one marker on the last cacheable block (A1, A8)."""

    name = "auto"

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        return self._mark([last_markable(request)])


class SystemOnly(Policy):
    """One marker on the end of the system prompt."""

    name = "system_only"

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        return self._mark([system_end(request)])


class SystemAnd3(Policy):
    """The host's legacy layout: the system prompt plus the last 3 eligible non-system messages."""

    name = "system_and_3"

    def __init__(self, ttl: str = "5m", *, tool_part_markers: bool = True, last: int = 3) -> None:
        super().__init__(ttl)
        self.tool_part_markers = tool_part_markers
        self.last = last

    def _last_messages(self, request: RenderedRequest, messages: Sequence[Message], count: int) -> list[int]:
        found: list[int] = []
        for index in range(len(messages) - 1, -1, -1):
            if len(found) == count:
                break
            if eligible(messages[index], tool_part_markers=self.tool_part_markers):
                block = message_marker_block(request, index)
                if block >= 0:
                    found.append(block)
        return found

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        return self._mark([system_end(request), *self._last_messages(request, messages, self.last)])


class HermesCurrent(SystemAnd3):
    """The host's current layout: static system prefix and full system marked, then the last 2.

    With no known static prefix (or one the system text does not start with), it falls back to
    system + last 3. ``tool_plan=True`` is the host's tool-cache layout: the static prefix, the last
    tool schema and the last 2 completed-transaction endpoints.
    """

    name = "hermes_current"

    def __init__(
        self,
        ttl: str = "5m",
        *,
        static_prefix: str | None = None,
        tool_plan: bool = False,
        tool_part_markers: bool = True,
    ) -> None:
        super().__init__(ttl, tool_part_markers=tool_part_markers)
        self.static_prefix = static_prefix
        self.tool_plan = tool_plan

    def system_split(self, system_text: str) -> int | None:
        prefix = self.static_prefix
        if prefix and system_text.startswith(prefix) and system_text[len(prefix) :].strip():
            return len(prefix)
        return None

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        split = (
            bool(messages)
            and messages[0].get("role") == "system"
            and self.system_split(str(messages[0].get("content") or "")) is not None
        )
        # Tools and the system prompt lead the request: stop at the first message block.
        system_blocks: list[int] = []
        tools: list[int] = []
        for i, b in enumerate(request.blocks):
            if b.section == "messages":
                break
            if b.section == "tools":
                tools.append(i)
            elif b.section == "system" and b.kind != "overhead":  # the system message's blocks
                system_blocks.append(i)
        if self.tool_plan and split:
            return self._mark([system_blocks[0], tools[-1] if tools else -1, *self._endpoints(request, messages)])
        if not split:
            return super().markers(request, messages)
        return self._mark([*system_blocks[:2], *self._last_messages(request, messages, 2)])

    def _endpoints(self, request: RenderedRequest, messages: Sequence[Message]) -> list[int]:
        """The last 2 completed-transaction ends: a finished tool run's last result, or a finished turn."""
        found: list[int] = []
        for index in range(len(messages) - 1, 0, -1):
            if len(found) == 2:
                break
            message = messages[index]
            role = message.get("role")
            nxt = messages[index + 1] if index + 1 < len(messages) else None
            run_end = role == "tool" and (nxt is None or nxt.get("role") != "tool")
            turn_end = role == "assistant" and not tool_calls(message)
            if (run_end and self.tool_part_markers) or turn_end:
                block = message_marker_block(request, index)
                if block >= 0:
                    found.append(block)
        return found


class ClaudeCodeLike(Policy):
    """What Claude Code does (caching.md §6.2): the system/tools layer, the project context (the
    first user message, which carries CLAUDE.md and memory), and the last block, moving each turn."""

    name = "claude_code"

    def __init__(self, ttl: str = "1h", *, project_context: bool = True) -> None:
        super().__init__(ttl)
        self.project_context = project_context

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        blocks = [system_end(request), last_markable(request)]
        if self.project_context:
            first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
            if first_user is not None:
                blocks.append(message_marker_block(request, first_user))
        return self._mark(blocks)


class RollingAnchor(Policy):
    """System marker, the last block, and anchors on every ``k``-th lookback position, so a wide
    turn (many tool calls) never pushes the previous write outside the 20-position window."""

    name = "rolling_anchor"

    def __init__(self, ttl: str = "5m", *, k: int = 18) -> None:
        super().__init__(ttl)
        if not 1 <= k <= 20:
            raise ConfigError(f"rolling_anchor: k must be in 1..20 (inside the lookback window), got {k}")
        self.k = k

    def markers(self, request: RenderedRequest, messages: Sequence[Message]) -> list[Marker]:
        last = last_markable(request)
        blocks = [system_end(request), last]
        if last >= 0:
            p = request.position_of[last]
            anchor = (p // self.k) * self.k
            if anchor == p:
                anchor -= self.k
            while anchor > 0 and len(blocks) < MAX_MARKERS:
                block = last_markable(request, request.positions[anchor])
                if block >= 0 and request.blocks[block].section == "messages":
                    blocks.append(block)
                anchor -= self.k
        return self._mark(blocks)


POLICIES: Registry[type[Policy]] = Registry(
    "cache policy", entry_points="contextlab.cache_policies", convert=subclass_of(Policy, "cache policy")
)
"""Policy name → class (a mapping; the ``contextlab.cache_policies`` entry points add more)."""
for _cls in (NoCaching, Automatic, SystemOnly, SystemAnd3, HermesCurrent, ClaudeCodeLike, RollingAnchor):
    POLICIES.register(_cls.name, _cls, description=(_cls.__doc__ or "").strip().split("\n")[0], source="builtin")


def make_policy(spec: str | Policy, **options: Any) -> Policy:
    """A policy by name (``none``, ``auto``, ``system_only``, ``system_and_3``, ``hermes_current``,
    ``claude_code``, ``rolling_anchor``) or an instance."""
    if isinstance(spec, Policy):
        return spec
    cls = POLICIES.lookup(spec)
    try:
        return cls(**options)
    except TypeError as error:
        raise ConfigError(f"cache policy {spec}: {error}") from None


def apply_policy(
    policy: Policy,
    messages: Sequence[Message],
    tools: list[dict[str, Any]] | None = None,
    *,
    message_tokens: list[int] | None = None,
) -> tuple[list[Message], list[dict[str, Any]], list[Marker]]:
    """Copies of ``messages`` and ``tools`` with the policy's ``cache_control`` markers, and the markers.

    Existing markers are stripped first (the plan is idempotent and never exceeds four).
    """
    tools = tools or []
    out = [_strip(m) for m in copy.deepcopy(messages)]
    out_tools = [_strip(t) for t in copy.deepcopy(tools)]
    tokens = message_tokens or [0] * len(out)
    split = None
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        split = policy.system_split(str(out[0]["content"]))
    request = BlockRenderer().render(out, tokens, out_tools, 0, system_split=split)
    markers = policy.markers(request, out)
    control = {"type": "ephemeral", **({"ttl": policy.ttl} if policy.ttl != "5m" else {})}
    for marker in markers:
        block, message = request.blocks[marker.block], request.message_of(marker.block)
        if message == -1:
            out_tools[block.part]["cache_control"] = dict(control)
        elif message >= 0:
            _place(out, message, block.part, block.kind, control, split if message == 0 else None)
    return out, out_tools, markers


def _strip(value: dict[str, Any]) -> dict[str, Any]:
    value.pop("cache_control", None)
    content = value.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                part.pop("cache_control", None)
    return value


def _place(out: list[Message], index: int, part: int, kind: str, control: dict[str, Any], split: int | None) -> None:
    message = out[index]
    content = message.get("content")
    if message.get("role") == "tool" or kind == "tool_use" or not content:
        message["cache_control"] = dict(control)
        return
    if isinstance(content, str):
        if split is not None and 0 < split < len(content):
            if not (isinstance(message.get("content"), list)):
                message["content"] = [
                    {"type": "text", "text": content[:split]},
                    {"type": "text", "text": content[split:]},
                ]
            message["content"][min(part, 1)]["cache_control"] = dict(control)
        else:
            message["content"] = [{"type": "text", "text": content, "cache_control": dict(control)}]
        return
    if isinstance(content, list):
        offset = (
            1
            if message.get("role") == "assistant" and (message.get("reasoning_content") or message.get("reasoning"))
            else 0
        )
        position = min(max(part - offset, 0), len(content) - 1)
        target = content[position]
        if isinstance(target, dict):
            target["cache_control"] = dict(control)
        else:
            content[position] = {"type": "text", "text": str(target), "cache_control": dict(control)}
