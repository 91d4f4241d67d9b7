"""The LLM summarizer: any OpenAI-compatible chat endpoint, behind an on-disk record/replay cache.

The prompt follows the host's structure (``host-contract.md`` §2d step 5): a summarizer preamble,
the serialised turns (``TURNS TO SUMMARIZE`` or ``PREVIOUS SUMMARY`` + ``NEW TURNS TO
INCORPORATE``), an optional memory block, the template headings, a footer with the target size,
and the focus block last. It is sent as one user message with **no** ``max_tokens``.

Responses are stored under ``cache_dir`` keyed by sha256 of (model, prompt), so a second replay is
byte-identical and needs no network. Provider failures are mapped onto the host's failure classes
(:class:`~contextlab.engines.summarizers.base.FailureKind`). The ``openai`` client is in the
``[llm]`` extra and imported only when a call is actually needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.engines.summarizers.base import FailureKind, SummaryFailure, SummaryRequest
from contextlab.errors import ConfigError
from contextlab.messages import content_text, tool_call_arguments, tool_call_name, tool_calls
from contextlab.redact import redact

BODY_MAX_CHARS = 6_000
BODY_HEAD_CHARS = 4_000
BODY_TAIL_CHARS = 1_500
ARGS_MAX_CHARS = 1_500
ARGS_KEEP_CHARS = 1_200
BLOCK_MAX_CHARS = 160_000
BLOCK_HEAD_SHARE = 0.45
MODES = ("record", "replay", "live")
ENV_MODEL = "CONTEXTLAB_LLM_MODEL"
ENV_BASE_URL = "CONTEXTLAB_LLM_BASE_URL"
ENV_API_KEY = "CONTEXTLAB_LLM_API_KEY"
ENV_CACHE_DIR = "CONTEXTLAB_LLM_CACHE"

PREAMBLE = (
    "You are the summarisation step of an AI agent's context manager. Summarise the conversation turns "
    "below into a handoff for the assistant that continues this work in a fresh context window.\n"
    "Rules: write in the language the user wrote in; state only what the turns show and say so when "
    "something is inferred; never reproduce secrets (API keys, passwords, tokens, private keys): write "
    "[REDACTED] instead."
)
UPDATE_RULES = (
    "Update the previous summary with the new turns: keep every item that is still relevant, add what the "
    "new turns established, move finished work into Completed Actions, and keep identifiers exact."
)
FOOTER = (
    "Target ~{budget} tokens. Anchor relative dates to absolute ones when the turns give a date. "
    "Write only the summary body: no preamble, no closing remarks."
)
_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_MEDIA = re.compile(r"^MEDIA:.*$", re.MULTILINE)


# --------------------------------------------------------------------------- prompt


def _cut_body(text: str) -> str:
    if len(text) <= BODY_MAX_CHARS:
        return text
    return f"{text[:BODY_HEAD_CHARS]}...[truncated]...{text[-BODY_TAIL_CHARS:]}"


def serialize_turns(messages: list[Message]) -> str:
    """The middle as the host serialises it for the summarizer (redacted, cut, capped at 160K chars)."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        text = _MEDIA.sub("[media attachment]", content_text(message))
        if role == "assistant":
            text = _THINK.sub("", text)
        text = _cut_body(redact(text))
        if role == "tool":
            lines.append(f"[TOOL RESULT {message.get('tool_call_id', '')}]: {text}")
        elif role == "assistant":
            calls = []
            for call in tool_calls(message):
                args = redact(tool_call_arguments(call))
                if len(args) > ARGS_MAX_CHARS:
                    args = args[:ARGS_KEEP_CHARS] + "..."
                calls.append(f"{tool_call_name(call)}({args})")
            suffix = f" [Tool calls: {', '.join(calls)}]" if calls else ""
            lines.append(f"[ASSISTANT]: {text}{suffix}")
        else:
            lines.append(f"[{str(role).upper()}]: {text}")
    block = "\n\n".join(lines)
    if len(block) > BLOCK_MAX_CHARS:
        head = int(BLOCK_MAX_CHARS * BLOCK_HEAD_SHARE)
        tail = BLOCK_MAX_CHARS - head
        omitted = len(block) - head - tail
        block = f"{block[:head]}\n\n...[omitted {omitted} chars]...\n\n{block[-tail:]}"
    return block


def build_prompt(request: SummaryRequest) -> str:
    """The whole summarisation prompt for ``request`` (one user message)."""
    turns = serialize_turns(request.turns)
    parts = [PREAMBLE]
    if request.previous_summary:
        parts.append(f"PREVIOUS SUMMARY:\n{request.previous_summary}")
        parts.append(f"NEW TURNS TO INCORPORATE:\n{turns}")
        parts.append(UPDATE_RULES)
    else:
        parts.append(f"TURNS TO SUMMARIZE:\n{turns}")
    if request.memory_context:
        parts.append(f"<memory-provider-context>\n{json.dumps(request.memory_context)}\n</memory-provider-context>")
    headings = "\n".join(f"## {h}" for h in request.template.headings)
    parts.append(
        "Use exactly these sections, in this order (write 'None.' under a section with nothing to say; "
        "number Completed Actions as `N. ACTION target — outcome [tool: name]`):\n" + headings
    )
    parts.append(FOOTER.format(budget=request.budget_tokens))
    focus = request.focus_topic or request.auto_focus
    if focus:
        parts.append(
            f"FOCUS TOPIC: {focus}\nGive this focus about 60-70% of the summary; keep the other sections brief."
        )
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- cache


def cache_key(model: str, prompt: str) -> str:
    """sha256 of (model, prompt)."""
    payload = json.dumps([model, prompt], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """Summaries on disk, one JSON file per (model, prompt) key, written atomically."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        path = self._path(key)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise ConfigError(f"{path}: unreadable LLM cache entry: {error}") from error
        text = record.get("response") if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise ConfigError(f"{path}: LLM cache entry has no 'response' string")
        return text

    def put(self, key: str, model: str, response: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"key": key, "model": model, "response": response}
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle, ensure_ascii=False, sort_keys=True)
        os.replace(tmp, path)


# --------------------------------------------------------------------------- failures


def classify(error: BaseException) -> FailureKind:
    """Map an ``openai`` client exception onto the host's failure classes."""
    import openai

    if isinstance(error, openai.APITimeoutError):
        return FailureKind.TIMEOUT
    if isinstance(error, openai.APIConnectionError):
        cause: BaseException | None = error
        while cause is not None:
            name = type(cause).__name__
            if name in ("RemoteProtocolError", "ReadError", "IncompleteRead", "LocalProtocolError"):
                return FailureKind.STREAM
            if name in ("ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"):
                return FailureKind.TIMEOUT
            cause = cause.__cause__ or cause.__context__
        return FailureKind.NETWORK
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        text = f"{error.message} {error.body}".lower()
        if status in (401, 403):
            return FailureKind.AUTH
        if status == 402 or "insufficient_quota" in text or ("quota" in text and status == 429):
            return FailureKind.QUOTA
        if status in (408, 429, 502, 504):
            return FailureKind.TIMEOUT
        if status in (404, 503):
            return FailureKind.MODEL_NOT_FOUND
        return FailureKind.OTHER
    if isinstance(error, (openai.APIResponseValidationError, json.JSONDecodeError)):
        return FailureKind.JSON
    if "timed out" in str(error).lower():
        return FailureKind.TIMEOUT
    return FailureKind.OTHER


class SummarizerUnreachableWarning(UserWarning):
    """The LLM summarizer could not get a summary from its endpoint (said once per URL and failure class)."""


_warned: set[tuple[str, FailureKind]] = set()
_warned_lock = threading.Lock()


def warn_unreachable_once(base_url: str, kind: FailureKind, error: str) -> bool:
    """One warning per (endpoint, failure class) and process, naming the URL and the error, so a
    replay against a dead endpoint is not a silent run of fallback summaries. True when issued."""
    with _warned_lock:
        if (base_url, kind) in _warned:
            return False
        _warned.add((base_url, kind))
    warnings.warn(
        f"LLM summarizer at {base_url} failed ({kind.value}): {error}; compactions fall back or abort "
        "(see the 'reason' column of the compactions frame)",
        SummarizerUnreachableWarning,
        stacklevel=4,
    )
    return True


# --------------------------------------------------------------------------- the summarizer


class LLMSummarizer:
    """Summaries from an OpenAI-compatible chat endpoint, recorded to and replayed from disk.

    Args:
        model: The summary model (env ``CONTEXTLAB_LLM_MODEL``).
        base_url: Endpoint base URL, e.g. ``http://127.0.0.1:8000/v1`` (env ``CONTEXTLAB_LLM_BASE_URL``,
            then ``OPENAI_BASE_URL``).
        api_key: API key (env ``CONTEXTLAB_LLM_API_KEY``, then ``OPENAI_API_KEY``).
        cache_dir: Record/replay directory (env ``CONTEXTLAB_LLM_CACHE``; default
            ``~/.cache/contextlab/llm``).
        mode: ``"record"`` (cache first, call on a miss), ``"replay"`` (cache only: a miss is a
            ``no_provider`` failure) or ``"live"`` (always call, then record).
        timeout_s: Client timeout per call (default 90 s: below the host's 120 s compaction timeout,
            so a hung endpoint ends as a summary failure with a fallback, not a discarded pass).
        main_model: When set and different from ``model``, a failed call is retried once on it
            (the host retries a separate summary model on the main model).
    """

    name = "llm"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        cache_dir: str | Path | None = None,
        mode: str = "record",
        timeout_s: float = 90.0,
        main_model: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"LLM summarizer mode must be one of {MODES}, got {mode!r}")
        self.model = model or os.environ.get(ENV_MODEL) or ""
        self.base_url = base_url or os.environ.get(ENV_BASE_URL) or os.environ.get("OPENAI_BASE_URL") or ""
        self._api_key = api_key or os.environ.get(ENV_API_KEY) or os.environ.get("OPENAI_API_KEY") or ""
        default_cache = Path.home() / ".cache" / "contextlab" / "llm"
        self.cache = ResponseCache(cache_dir or os.environ.get(ENV_CACHE_DIR) or default_cache)
        self.mode = mode
        self.timeout_s = float(timeout_s)
        self.main_model = main_model
        self.calls = 0
        self._client: Any = None

    def __deepcopy__(self, memo: dict[int, Any]) -> LLMSummarizer:
        # Engines are deep-copied per agent (``clone_for_agent``); an HTTP client cannot be, so the
        # copy shares the configuration and opens its own client on first use.
        clone = LLMSummarizer.__new__(LLMSummarizer)
        clone.__dict__.update(self.__dict__)
        clone._client = None
        clone.calls = 0
        return clone

    def __repr__(self) -> str:  # never show the key
        return f"LLMSummarizer(model={self.model!r}, base_url={self.base_url!r}, mode={self.mode!r})"

    def summarize(self, request: SummaryRequest) -> str:
        """The summary body for ``request``; raises :class:`SummaryFailure` with the host class."""
        prompt = request.prompt or build_prompt(request)  # the host's exact prompt when the engine sets it
        try:
            return self._summarize_with(self.model, prompt)
        except SummaryFailure:
            if not self.main_model or self.main_model == self.model:
                raise
            return self._summarize_with(self.main_model, prompt)

    def _summarize_with(self, model: str, prompt: str) -> str:
        key = cache_key(model, prompt)
        if self.mode != "live":
            hit = self.cache.get(key)
            if hit is not None:
                return hit
            if self.mode == "replay":
                raise SummaryFailure(FailureKind.NO_PROVIDER, f"no recorded response for key {key[:12]} (replay mode)")
        if not model or not self.base_url:
            raise SummaryFailure(FailureKind.NO_PROVIDER, "no summary model or base URL configured")
        text = self._call(model, prompt)
        self.cache.put(key, model, text)
        return text

    def _client_for(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as error:
                raise SummaryFailure(
                    FailureKind.NO_PROVIDER,
                    "the 'openai' package is not installed (pip install 'contextlab[llm]')",
                ) from error
            # Retries are the host's business (cooldowns), so the client must not retry on its own.
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key or "unused",
                max_retries=0,
                timeout=self.timeout_s,
            )
        return self._client

    def _call(self, model: str, prompt: str) -> str:
        client = self._client_for()
        self.calls += 1
        try:
            # No max_tokens on the wire: the host never caps the summary.
            response = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}])
        except Exception as error:
            kind = classify(error)
            detail = f"{self.base_url}: {type(error).__name__}: {error}"
            if kind in (FailureKind.NETWORK, FailureKind.TIMEOUT, FailureKind.AUTH, FailureKind.MODEL_NOT_FOUND):
                warn_unreachable_once(self.base_url, kind, f"{type(error).__name__}: {error}")
            raise SummaryFailure(kind, detail) from error
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as error:
            raise SummaryFailure(FailureKind.JSON, f"unexpected response shape: {type(response).__name__}") from error
        text = _THINK.sub("", content or "").strip()
        if not text:
            raise SummaryFailure(FailureKind.EMPTY, "the endpoint returned an empty summary")
        return redact(text)
