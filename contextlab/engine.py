"""The ContextEngine ABC: the Hermes Agent host contract, and nothing else.

An engine written against the real host (``from agent.context_engine import ContextEngine``)
runs here unchanged, and an engine subclassing this class runs in the real host unchanged: the
attribute names, defaults and method signatures below are the host's (``host-contract.md`` §1).
Optional hooks keep the host's defaults; the replay host never calls a hook an engine merely
inherits (identity check, see :func:`overrides`), exactly as the real host does.
"""

from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from typing import Any

Message = dict[str, Any]
"""One OpenAI-format chat message (``role``, ``content``, optional ``tool_calls``/``tool_call_id``)."""

USAGE_KEYS: tuple[str, ...] = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
"""The eight keys of the usage dict the host passes to ``update_from_response``."""


class ContextEngine(ABC):
    """Base class of every context engine: decides when and how the conversation is compacted.

    Required: :attr:`name`, :meth:`update_from_response`, :meth:`should_compress`, :meth:`compress`.
    Everything else is optional and defaults to the host's behaviour.
    """

    # Attributes the host reads directly (host-contract.md §1a).
    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    protect_first_n: int = 3
    protect_last_n: int = 6
    emit_automatic_compaction_status: bool = True

    # ----------------------------------------------------------------- required

    @property
    @abstractmethod
    def name(self) -> str:
        """Short identifier; must equal the ``context.engine`` config value."""

    @abstractmethod
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Called after every provider response with the usage dict (see :data:`USAGE_KEYS`)."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Return True if compaction should fire; ``None`` means use :attr:`last_prompt_tokens`."""

    @abstractmethod
    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        """Compact ``messages`` and return a valid OpenAI-format list.

        Returning the identical input object means "no-op": the host does not re-baseline.
        """

    # ------------------------------------------------------- optional, defaulted

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """``(should_compress, reason it is blocked or None)``; the host uses the reason for warnings."""
        return self.should_compress(prompt_tokens), None

    def prune_tool_results_only(
        self, messages: list[Message], current_tokens: int | None = None
    ) -> tuple[list[Message], int]:
        """Cheap pruning on the post-tool blocked path; the host commits only a new list with n > 0."""
        return messages, 0

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: list[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message] | None:
        """Replace the context for this one provider request; ``None`` leaves it unchanged."""
        return None

    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Observe a finished turn (a clone of the transcript and the turn's usage); return ignored."""
        return None

    def should_compress_preflight(self, messages: list[Message]) -> bool:
        """Engine-driven maintenance below the threshold at turn start; True runs one ``compress``."""
        return False

    def pending_compression_operation(self, messages: list[Message]) -> str | None:
        """``"sanitize"`` promises the next automatic compress is pure sanitation."""
        return None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """True makes the preflight and pre-API gates wait for real usage instead of a rough estimate."""
        return False

    def get_automatic_compaction_status_message(
        self, *, phase: str, default_message: str, **context: Any
    ) -> str | None:
        """Status line for an automatic compaction, or None to stay quiet."""
        return default_message if self.emit_automatic_compaction_status else None

    def has_content_to_compress(self, messages: list[Message]) -> bool:
        """Guard for a manual ``/compress`` ("nothing to compress yet")."""
        return True

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """A conversation begins (also after a durable compaction, ``boundary_reason="compression"``)."""
        return None

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        """A real session boundary (exit, ``/reset``); never per turn."""
        return None

    def on_session_reset(self) -> None:
        """``/new`` and ``/reset``: zero the token counters and the compaction count."""
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """Tool schemas the engine exposes to the model (injected into the tool list at start-up)."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run one of the engine's tools; always returns a JSON string."""
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self) -> dict[str, Any]:
        """Status for ``/context``-style displays."""
        last = max(0, int(self.last_prompt_tokens))
        usage_percent = min(100.0, last / self.context_length * 100) if self.context_length else 0
        return {
            "last_prompt_tokens": last,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": usage_percent,
            "compression_count": self.compression_count,
        }

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """Adopt a model's window and re-derive ``threshold_tokens`` from the configured percent."""
        self.context_length = int(context_length)
        if not hasattr(self, "_config_threshold_percent"):
            # Snapshot once, so later per-model overrides never compound.
            self._config_threshold_percent = float(self.threshold_percent)
        pct = self._config_threshold_percent
        overrides: dict[str, float] = getattr(self, "model_thresholds", None) or {}
        override = match_model_threshold(overrides, model, provider)
        if override is not None:
            pct = override
        self.threshold_percent = pct
        self.threshold_tokens = int(self.context_length * pct)

    def clone_for_agent(self) -> ContextEngine:
        """A per-agent instance of a process-wide engine (default: a deep copy)."""
        return copy.deepcopy(self)


def match_model_threshold(overrides: dict[str, float], model: str, provider: str = "") -> float | None:
    """The ``model_thresholds`` value whose key matches ``model`` best, or None.

    Keys are model-name substrings (case-insensitive); the longest match wins. Keys of the form
    ``"<provider>:<substr>"`` only match that provider and beat unscoped keys.
    """
    model_l = (model or "").lower()
    best: tuple[int, int] = (-1, -1)
    value: float | None = None
    for key, pct in overrides.items():
        scope, sep, substr = key.partition(":") if ":" in key else ("", "", key)
        if sep and scope.lower() != (provider or "").lower():
            continue
        if substr.lower() in model_l:
            rank = (1 if sep else 0, len(substr))
            if rank > best:
                best, value = rank, float(pct)
    return value


def overrides(engine: object, hook: str) -> bool:
    """True when ``engine`` defines ``hook`` itself instead of inheriting an ABC default.

    The host never calls an inherited optional hook, so a non-implementing engine pays nothing. The
    defaults of both ABCs count as inherited: contextlab's and, when a real Hermes ``agent`` package
    is loaded, the host's own ``agent.context_engine.ContextEngine`` (which may lack newer hooks).
    """
    from contextlab.compat import engine_bases

    bases = engine_bases()
    for klass in type(engine).__mro__:
        if hook in vars(klass):
            return klass not in bases
    return False


def is_engine(obj: object) -> bool:
    """True for an instance of contextlab's ``ContextEngine`` or of the real host's."""
    from contextlab.compat import engine_bases

    return isinstance(obj, engine_bases())


def is_engine_class(obj: object) -> bool:
    """True for a subclass of contextlab's ``ContextEngine`` or of the real host's (the ABCs included)."""
    from contextlab.compat import engine_bases

    return isinstance(obj, type) and issubclass(obj, engine_bases())


def hook(engine: Any, name: str) -> Any:
    """``engine.<name>`` bound, or contextlab's default for it when the engine's ABC predates that hook.

    An engine on an older host ABC (the real ``agent.context_engine`` of an earlier release) may lack
    optional hooks entirely; the host behaves as if it had the default, and so does contextlab.
    """
    impl = getattr(engine, name, None)
    if impl is not None:
        return impl
    return getattr(ContextEngine, name).__get__(engine, type(engine))


def clone_engine(engine: Any) -> Any:
    """``engine.clone_for_agent()``, or a deep copy (the host's older default) when the engine's ABC has none."""
    clone = getattr(engine, "clone_for_agent", None)
    return clone() if callable(clone) else copy.deepcopy(engine)
