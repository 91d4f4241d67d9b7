"""What the host does with an assistant's reasoning: which routes echo it back, and its wire form.

A model's reasoning is kept in the history (``reasoning``, ``reasoning_content``,
``reasoning_details``) but most providers must not see it again: strict OpenAI-compatible
endpoints reject a ``reasoning_content`` key outright, while DeepSeek, Kimi and Xiaomi MiMo in
thinking mode reject an assistant turn *without* one. The host therefore decides per route
whether reasoning is echoed, and shapes every assistant row's copy for the request accordingly.
That decision moves prompt tokens (and so every compaction) on reasoning-heavy sessions.

Followed (both agree on every rule here): PyPI ``hermes-agent`` 0.19.0, ``run_agent.py``
(``_needs_kimi_tool_reasoning``, ``_needs_deepseek_tool_reasoning``, ``_needs_mimo_tool_reasoning``,
``_is_thinking_only_assistant``), ``agent/agent_runtime_helpers.py`` (``copy_reasoning_content_for_api``),
``agent/conversation_loop.py`` (the request copy pops ``reasoning`` and ``finish_reason``) and
``utils.py`` (``base_url_host_matches``); and ``NousResearch/hermes-agent@00c301f41387079b7bd316a549c39717d79c042a``,
``agent/message_sanitization.py`` (``_REASONING_ECHO_RULES``, ``apply_reasoning_content_policy``,
``stale_thinking_reaches_wire``). ``docs/host-loop.md`` (*Reasoning on the wire*) has the details.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from contextlab.engine import Message

REASONING_PAD = " "
"""What an echo route gets for an assistant turn with no usable reasoning: a single space, as
DeepSeek rejects an empty string there."""

WIRE_DROPPED_KEYS = frozenset({"reasoning", "finish_reason"})
"""Keys the host pops from every row of the request copy, whatever the route (trajectory-only)."""


@dataclass(frozen=True)
class EchoFamily:
    """Providers that require ``reasoning_content`` echoed back on every assistant turn.

    A route belongs to the family when its provider is one of ``providers`` (compared as given),
    or one of ``providers_lowered`` (compared lowercased), or its lowercased model name contains
    one of ``model_substrings``, or its base URL's host is one of ``hosts`` or a subdomain of one.
    """

    name: str
    providers: frozenset[str] = frozenset()
    providers_lowered: frozenset[str] = frozenset()
    model_substrings: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()

    def matches(self, provider: str, model: str, base_url: str) -> bool:
        """True when the route (provider, model, base URL) is one of this family's."""
        model_lower = (model or "").lower()
        return (
            (provider or "") in self.providers
            or (provider or "").lower() in self.providers_lowered
            or any(sub in model_lower for sub in self.model_substrings)
            or any(host_matches(base_url, host) for host in self.hosts)
        )


ECHO_FAMILIES: tuple[EchoFamily, ...] = (
    # Host-driven only: aggregators re-exporting Kimi models speak their own protocol and reject it.
    EchoFamily(
        "kimi",
        providers=frozenset({"kimi-coding", "kimi-coding-cn"}),
        hosts=("api.kimi.com", "moonshot.ai", "moonshot.cn"),
    ),
    EchoFamily(
        "deepseek",
        providers_lowered=frozenset({"deepseek"}),
        model_substrings=("deepseek",),
        hosts=("api.deepseek.com",),
    ),
    EchoFamily(
        "mimo",
        providers_lowered=frozenset({"xiaomi"}),
        model_substrings=("mimo",),
        hosts=("api.xiaomimimo.com", "xiaomimimo.com"),
    ),
)
"""The host's echo-back families, in its order (the first match names the family)."""


def url_hostname(base_url: str) -> str:
    """The lowercased host of a base URL (a bare ``host[:port][/path]`` too), ``""`` without one."""
    raw = (base_url or "").strip()
    if not raw:
        return ""
    try:
        parsed = urlparse(raw if "://" in raw else f"//{raw}")
        return (parsed.hostname or "").lower().rstrip(".")
    except ValueError:  # an unparseable URL (a bad port, an unclosed bracket) has no host
        return ""


def host_matches(base_url: str, domain: str) -> bool:
    """True when the base URL's host is ``domain`` or a subdomain of it (never a substring match:
    ``https://evil.example/moonshot.ai`` is not Moonshot)."""
    hostname = url_hostname(base_url)
    domain = (domain or "").strip().lower().rstrip(".")
    return bool(hostname and domain) and (hostname == domain or hostname.endswith("." + domain))


def echo_family(provider: str = "", model: str = "", base_url: str = "") -> str | None:
    """The echo-back family of a route (``"kimi"``, ``"deepseek"``, ``"mimo"``), None for a strict one."""
    for family in ECHO_FAMILIES:
        if family.matches(provider, model, base_url):
            return family.name
    return None


def needs_reasoning_echo(provider: str = "", model: str = "", base_url: str = "") -> bool:
    """True when the route requires ``reasoning_content`` on every assistant turn."""
    return echo_family(provider, model, base_url) is not None


def stale_thinking_reaches_wire(provider: str = "", model: str = "", base_url: str = "", api_mode: str = "") -> bool:
    """True when old turns' reasoning text is sent again on this route: an echo route, unless it
    speaks the Responses API (``codex_responses``), whose requests never read the text keys."""
    return (api_mode or "") != "codex_responses" and needs_reasoning_echo(provider, model, base_url)


def wire_reasoning(source: Message, echo: bool) -> tuple[bool, Any]:
    """The ``reasoning_content`` an assistant row's request copy carries: ``(False, None)`` for none.

    Strict route: never one (not even an empty string or a pad). Echo route: a string
    ``reasoning_content`` as it is (``""`` becomes the pad); else a non-empty ``reasoning`` promoted,
    unless the turn made tool calls (then that text came from another provider and is not
    leaked: the pad); else the pad.
    """
    if not echo:
        return False, None
    existing = source.get("reasoning_content")
    if isinstance(existing, str):
        return True, existing or REASONING_PAD
    reasoning = source.get("reasoning")
    if isinstance(reasoning, str) and reasoning and not source.get("tool_calls"):
        return True, reasoning
    return True, REASONING_PAD


def is_thinking_only(message: Message) -> bool:
    """An assistant turn whose only payload is reasoning: no tool calls, no visible text (content
    blocks other than thinking and blank text count as payload), and reasoning text that is not
    blank, or a non-empty ``reasoning_details`` list, or a Responses reasoning item. The host
    judges the request copy, so on a strict route a row whose reasoning was only
    ``reasoning_content`` is an empty turn, not a thinking-only one."""
    if message.get("role") != "assistant" or message.get("tool_calls"):
        return False
    content = message.get("content")
    if isinstance(content, str):
        if content.strip():
            return False
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                if block:
                    return False
                continue
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                continue
            if kind == "text":
                text = block.get("text", "")
                if isinstance(text, str) and text.strip():
                    return False
                continue
            return False
    elif content is not None and content != "":
        return False
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning.strip():
        return True
    details = message.get("reasoning_details")
    if isinstance(details, list) and details:
        return True
    items = message.get("codex_reasoning_items")  # dropped unless the route is the Responses API (not replayed)
    if isinstance(items, list):
        return any(isinstance(item, dict) and item.get("type") == "reasoning" for item in items)
    return False
