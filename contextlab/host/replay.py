"""The replay host: an open-loop simulation of the Hermes Agent turn loop around one engine.

Each recorded assistant message is one provider request. Before it the host assembles the
request from the engine-managed history exactly as the real host does, runs the gates, counts,
and records a trace row; then the recorded assistant message and its tool results are appended,
whatever the engine did. Order per turn (``host-contract.md`` §5): manual ``/compress`` → user
message → turn-start preflight → for each request: assembly (``select_context``) → pre-API gate →
overflow recovery → simulated response → ``update_from_response`` → tool results → post-tool gate
(compress, else ``prune_tool_results_only``) → ``on_turn_complete``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from itertools import compress, count, repeat
from operator import eq, is_not
from typing import Any

from contextlab import clock as vclock
from contextlab import hermes_texts
from contextlab.engine import ContextEngine, Message, hook, overrides
from contextlab.host.assistant_rows import made_assistant
from contextlab.host.compaction import CompactionRunner, PassResult
from contextlab.host.engine_tools import EngineToolRouter, inject_engine_tools
from contextlab.host.heap import quiet_collector
from contextlab.host.history import WorkingHistory
from contextlab.host.home import HOST_PLATFORM, EngineHome
from contextlab.host.lifecycle import HostEventPlan, observation_copy
from contextlab.host.memo import MessageMemo
from contextlab.host.micro_turn import completed_with_reply, micro_pass
from contextlab.host.observers import RequestObserver, RequestView
from contextlab.host.request import AssembledRequest, RequestAssembler
from contextlab.host.settings import HostSettings
from contextlab.host.tool_guard import ToolLoopGuard
from contextlab.host.tool_results import ToolResultBudget, ToolResultMaker
from contextlab.host.trace import (
    COMPACTION_COLUMNS,
    TRACE_COLUMNS,
    ReplayResult,
    build_frame,
    frame_and_arrays,
    summarize,
)
from contextlab.host.turns import Step, Turn, plan_turns
from contextlab.host.usage_model import reported_prompt_tokens
from contextlab.host.user_turn import DB_PERSISTED_KEY, ensure_user_turn
from contextlab.host.validity import row_problem
from contextlab.host.versions import host_rules
from contextlab.host.views import settled_rule
from contextlab.messages import (
    UidMinter,
    clone_messages,
    freeze,
    keeps_thought_signatures,
    stamp_identity,
    tool_calls,
    wire_message,
)
from contextlab.reasoning import needs_reasoning_echo
from contextlab.thresholds import threshold_note, warn_clamped_once, window_note
from contextlab.tokens import (
    REPLY_PRIMING_TOKENS,
    ExactCounter,
    RoughCounter,
    estimate_tokens_rough,
    estimate_tools_tokens_rough,
    legacy_message_chars,
    legacy_messages_tokens,
    legacy_text_tokens,
)
from contextlab.transcripts.model import Transcript

_FEW_CANDIDATES = 32
"""New rows in a commit up to which each is compared with the old rows one by one (C-level ``==``)."""

log = logging.getLogger(__name__)

UNCHANGED = "the engine returned the history unchanged"
"""The compactions frame's reason for a pass that changed nothing and said nothing of why."""
PROGRESS_RATIO = 0.95
"""A pass made progress when it left fewer rows or under 95% of the tokens (the host's rule)."""
COMPRESSION_TIMEOUT_EXIT = "context_compression_timeout"
"""``turn_exit_reason`` of a turn a timed-out compaction ended (``docs/host-loop.md`` §Timeouts)."""


class EngineFailure(Exception):
    """A required engine method raised: the run stops and is marked failed."""


class ReplayHost:
    """Replays one transcript through one engine instance. Use :func:`contextlab.replay`."""

    def __init__(
        self,
        transcript: Transcript,
        engine: ContextEngine,
        settings: HostSettings,
        *,
        engine_label: str,
        params_label: str,
        observers: Sequence[RequestObserver] = (),
        counter: ExactCounter | None = None,
    ) -> None:
        self.transcript = transcript
        self.engine = engine
        self.settings = settings
        self.observers = list(observers)
        self.exact = counter or ExactCounter(settings.encoding)
        self.model = settings.model or transcript.model or "gpt-4o"
        self.echo_reasoning = needs_reasoning_echo(settings.provider, self.model, settings.base_url)
        self.memo = MessageMemo(
            self.exact,
            RoughCounter(),
            echo_reasoning=self.echo_reasoning,
            thought_signatures=keeps_thought_signatures(self.model),
        )
        self.rules = host_rules(settings.hermes_version)
        self.runner = CompactionRunner(engine, settings.compress_timeout_s)
        self.minter = UidMinter(settings.seed)
        self._corruption_marker = hermes_texts.text("corrupted_arguments_marker")
        self.clock = vclock.VirtualClock()
        self.system_prompt = settings.system_prompt if settings.system_prompt is not None else transcript.system_prompt
        self.assembler = RequestAssembler(engine, self.memo, self.system_prompt, strict=settings.strict_select_context)
        self.base_tools = list(settings.tools if settings.tools is not None else transcript.tools)
        self.tools: list[dict[str, Any]] = list(self.base_tools)
        self.session_id = settings.session_id or f"replay-{transcript.transcript_id}"
        self._labels = {"transcript": transcript.transcript_id, "engine": engine_label, "params": params_label}
        self._defers = overrides(engine, "should_defer_preflight_to_real_usage")
        self._maintains = overrides(engine, "should_compress_preflight")
        self._observes_turns = overrides(engine, "on_turn_complete")
        self._session_hooks = overrides(engine, "on_session_start")
        # An optional method of the built-in compressor, outside the ABC: looked up once, not per request.
        self._reports_cooldown = callable(getattr(engine, "get_active_compression_failure_cooldown", None))
        # A Hermes recording holds the rows its host made already; they are never made twice.
        self._hermes_recording = transcript.source_format.startswith("hermes")
        self._makes_tool_results = settings.tool_results == "host" and not self._hermes_recording
        stall_guards = settings.stall_guards and self.rules.stall_guards
        guarded = settings.tool_loop_warnings or stall_guards
        guard = ToolLoopGuard(settings.tool_loop_warnings, stall_guards) if guarded else None
        inline = not self.rules.spill_to_host_cache
        self._tool_results = ToolResultMaker(ToolResultBudget(), guard, inline_spills=inline)
        self._tool_window = -1  # the window the maker's budget was scaled to
        self._ends_sessions = overrides(engine, "on_session_end")
        self._turns = plan_turns(transcript.messages)  # planned once: the run and the manual events use it
        self._manual = self._manual_compactions()
        self.events = HostEventPlan.of(transcript)
        self._base_session_id = self.session_id
        self._live_tools: EngineToolRouter | None = None
        self._home = EngineHome(settings.hermes_home)

        # Mutable replay state. The history is host-owned; engines only ever see clones, so per-row
        # memos stay valid (see host/history.py and host/memo.py). The host's own in-place marks (uids,
        # 0.19.0's store stamps) never reach the wire; the engine views re-clone a row they change.
        self._store_stamps = settings.session_store and not self.rules.message_uids
        self.working = WorkingHistory(
            self.memo,
            self.system_prompt,
            legacy_rough=not self.rules.per_message_rounding,
            settled=settled_rule(uids=self.rules.message_uids, store_stamps=self._store_stamps),
        )
        self._anchor: tuple[int, int] | None = None  # (prompt + completion, history length then)
        self._real_floor = 0
        self._awaiting_usage = False
        self._pending_verdict = False
        self._attempts = 0
        self._turn_index = 0
        self._rough_fixed = 0
        self._legacy_tools = 0  # 0.19.0's estimate of the tool schemas (and unseen overhead)
        self._legacy_system = (0, 0)  # 0.19.0: the system prompt as text, and its row's characters
        self._rewritten = False
        self._request_index = 0
        self._row_triggers: list[str] = []
        self._row_pruned = False
        self._engine_ms = 0.0
        self._turn_exit: str | None = None  # why the current turn's request path ended early
        self._last_outcome = ""  # outcome of the latest compaction pass
        self._row_invalid = 0  # malformed engine results since the last trace row
        self._row_session: str | None = None  # "/new" or "/reset" before this row's turn
        self._row_repairs = 0  # the host's repairs of its history since the last trace row
        self._previous: tuple[Sequence[Message], list[dict[str, Any]], int, int] | None = None
        self.rows: list[dict[str, Any]] = []
        self.compaction_rows: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        if settings.attempts_per_turn != settings.max_attempts:
            self.warnings.append(
                f"max_attempts={settings.max_attempts} has no effect under hermes_version {settings.hermes_version}: "
                f"that host always allows {settings.attempts_per_turn} compaction passes a turn"
            )
        self.threshold_note: str | None = None
        self.window_note: str | None = None

    @property
    def history(self) -> list[Message]:
        """The engine-managed working history (host-owned: treat as read-only)."""
        return self.working.rows

    # ------------------------------------------------------------------ run

    def run(self) -> ReplayResult:
        started = time.perf_counter()
        status, error = "ok", None
        with vclock.using(self.clock), quiet_collector():
            try:
                self._start_session()
                for turn in self._turns:
                    self._run_turn(turn)
                if self._ends_sessions:  # an inherited hook is never called, so no copy is made for it
                    self._call_optional("on_session_end", self.session_id, self._engine_copy())
            except EngineFailure as failure:
                status, error = "failed", str(failure)
            finally:
                self.runner.close()
                self._home.close()
            # The frames too: the collection put off inside the block then covers all a replay made.
            result = self._result(status, error)
        result.summary["wall_s"] = time.perf_counter() - started
        return result

    def _result(self, status: str, error: str | None) -> ReplayResult:
        """The trace, compactions and summary of the run, with the observers' frames and post-run columns."""
        trace, arrays = frame_and_arrays(self.rows, TRACE_COLUMNS)
        compactions = build_frame(self.compaction_rows, COMPACTION_COLUMNS)
        extra: dict[str, Any] = {}
        for observer in self.observers:
            extra.update(observer.summary())
        base = {
            **self._labels,
            "model": self.model,
            "context_length": self.settings.context_length,
            "threshold_tokens": int(self.engine.threshold_tokens),
            "threshold_percent": self.settings.threshold_percent,
            "threshold_note": self.threshold_note or "",
            "window_note": self.window_note or "",
            "status": status,
            "error": error,
        }
        summary = summarize(trace, compactions, base, extra, arrays)
        result = ReplayResult(trace, compactions, summary, status, error, self.warnings, self.engine)
        for observer in self.observers:
            finish = getattr(observer, "finish", None)
            if callable(finish):
                finish(result)  # measurement frames and post-run columns (docs/metrics.md)
        return result

    def _note_threshold(self) -> None:
        """Say once when ``threshold_percent`` did not give percent x window (docs/notebooks.md)."""
        note = threshold_note(
            self._labels["engine"],
            self.settings.threshold_percent,
            self.settings.context_length,
            int(self.engine.threshold_tokens),
        )
        if note:
            self.threshold_note = note
            self.warnings.append(note)
            warn_clamped_once(note)

    def _start_session(self) -> None:
        for observer in self.observers:
            bind_engine = getattr(observer, "bind_engine", None)
            if callable(bind_engine):
                bind_engine(self.engine)  # the recovery oracle calls the engine's own tools
            bind = getattr(observer, "bind", None)
            if callable(bind):
                bind(self.transcript)
        engine, settings = self.engine, self.settings
        if settings.threshold_percent is not None:
            engine.threshold_percent = settings.threshold_percent
        if settings.model_thresholds:
            engine.model_thresholds = dict(settings.model_thresholds)  # type: ignore[attr-defined]
        route = (settings.base_url, "", settings.provider, "")  # base_url, api_key, provider, api_mode
        self._required("update_model", self.model, settings.context_length, *route)
        self._note_threshold()
        window = getattr(engine, "context_length", 0)
        self.window_note = window_note(window) if isinstance(window, int) else None
        if self.window_note:
            self.warnings.append(self.window_note)
        # The engine's tools join the list before the session starts, as in the host's init.
        declared = self._call_optional("get_tool_schemas") or []
        if isinstance(declared, list | tuple):
            injected = inject_engine_tools(self.base_tools, declared)
            self.tools = injected.tools
            for line in injected.skipped:
                log.warning(line)
                self.warnings.append(line)
            if settings.engine_tools == "live" and injected.names:
                self._live_tools = EngineToolRouter(engine, injected.names)
        if self._session_hooks:
            self._call_optional(
                "on_session_start",
                self.session_id,
                hermes_home=self._home.path(),
                platform=HOST_PLATFORM,
                model=self.model,
                context_length=getattr(engine, "context_length", 0),
                conversation_id=None,  # the gateway's session key; a CLI session has none
            )
        # System prompt, tool schemas and unseen overhead: constant for the run, estimated once.
        self._rough_fixed = (
            estimate_tokens_rough(self.system_prompt or "")
            + estimate_tools_tokens_rough(self.tools)
            + self.settings.fixed_overhead_tokens
        )
        if not self.rules.per_message_rounding:
            self._legacy_tools = estimate_tools_tokens_rough(self.tools) + self.settings.fixed_overhead_tokens
            prompt = self.system_prompt or ""
            row = wire_message({"role": "system", "content": prompt}) if prompt else None
            self._legacy_system = (legacy_text_tokens(prompt), legacy_message_chars(row)[0] if row else 0)

    # ------------------------------------------------------------------ turns

    def _run_turn(self, turn: Turn) -> None:
        self._attempts = 0
        if self._tool_results.guard is not None:
            self._tool_results.guard.reset_for_turn()  # the guardrails count per user turn
        self._turn_index = turn.index
        self._turn_exit = None
        boundary = self.events.session_starts.get(turn.lead_indices[0]) if turn.lead_indices else None
        if boundary is not None:
            self._new_session(boundary)
        focus = self._manual.get(turn.index, _NO_MANUAL)
        if focus is not _NO_MANUAL:
            self._compact("manual", self._pressure(), focus_topic=focus, force=True)  # type: ignore[arg-type]
        messages = self.transcript.messages
        start = len(self.working.peek())
        for index in turn.lead_indices:
            self._tick(index)
            self._append([messages[index]])
        if turn.user_index is not None and turn.steps:
            # The turn-start gate prepares a request: a turn the recording ends on before any request
            # (a final observation, a session cut short) sends none, so no pass runs for it and the
            # compactions frame holds only passes some request followed (docs/host-loop.md).
            self._preflight()
        # The turn-start flush mints the user row's uid (a committed preflight already stamped all).
        self._stamp(self.working.peek(), start=min(start, len(self.working.peek())))
        self._store_flush()
        last_usage: dict[str, Any] | None = None
        sent = 0
        for position, step in enumerate(turn.steps):
            phase = "turn_start" if position == 0 else "tool_loop"
            if self._turn_exit is not None:
                self._tick(step.assistant_index)
                self._unsent(turn, step, phase, None)
                continue
            usage = self._request(turn, step, phase)
            if self._turn_exit is None:
                sent += 1
                last_usage = usage if usage is not None else last_usage
        if self._turn_exit is None and completed_with_reply(turn, self.transcript.messages):
            self._micro_compact()
        if self._observes_turns:
            # A shallow copy, as the plugin guide says (docs/host-loop.md §Observation).
            self._call_optional(
                "on_turn_complete",
                observation_copy(self.history),
                usage=dict(last_usage) if last_usage else None,
                turn_id=f"{self.session_id}:{turn.index}",
                task_id=self.transcript.transcript_id,
                api_call_count=sent,
                interrupted=False,
                failed=self._turn_exit is not None,
                turn_exit_reason=self._turn_exit or ("completed" if turn.steps else "no_request"),
            )

    def _new_session(self, kind: str) -> None:
        """``/new`` or ``/reset`` as the CLI runs it: the old session ends (when it has a history), the
        engine is reset, and the history starts empty; no ``on_session_start`` follows
        (docs/host-loop.md §Sessions)."""
        old = self.session_id
        if self._ends_sessions and self.working.peek():
            self._call_optional("on_session_end", old, self._engine_copy())
        self._call_optional("on_session_reset")
        self.session_id = f"{self._base_session_id}/{kind}@{self._turn_index}"
        self.working.replace([])
        self._anchor = None
        self._real_floor = 0
        self._awaiting_usage = False
        self._pending_verdict = False
        self._row_session = kind

    def _manual_compactions(self) -> dict[int, str | None]:
        """Manual ``/compress`` events: from the settings, and from the transcript's manual events."""
        found: dict[int, str | None] = {}
        starts = {t.lead_indices[0]: t.index for t in self._turns if t.lead_indices}
        for event in self.transcript.events:
            if event.trigger == "manual" and event.message_index in starts:
                found[starts[event.message_index]] = event.focus_topic
        found.update(self.settings.manual_compactions)
        return found

    # ------------------------------------------------------------------ gates

    def _preflight(self) -> None:
        """Turn-start gate: cheap pre-check, deferral, the engine's failure cooldown, threshold
        passes, else engine maintenance (``agent/turn_context_compaction.py`` @``e1805ec7``,
        ``_preflight_compression``; 0.19.0 ``agent/turn_context.py``: docs/host-loop.md §Host versions)."""
        if not self.settings.compression_enabled:
            return
        engine = self.engine
        first_n = int(getattr(engine, "protect_first_n", 3))
        last_n = int(getattr(engine, "protect_last_n", 6))
        cheap = len(self.working.peek()) > first_n + last_n + 1 or self._persisted_rough() >= engine.threshold_tokens
        if not cheap:
            return
        pressure = self._pressure()
        deferred = bool(
            self._anchor is None
            and self._defers
            and self._call_optional("should_defer_preflight_to_real_usage", pressure)
        )
        if self.rules.preflight_seeds_last_prompt and not deferred:
            last = int(engine.last_prompt_tokens)
            if last >= 0 and pressure > last:  # never over the -1 sentinel of a fresh compaction
                engine.last_prompt_tokens = pressure
        if deferred or self._failure_cooldown():
            return
        if self._required("should_compress", pressure):
            self._preflight_passes(pressure)
        elif (
            self.rules.preflight_maintenance
            and self._maintains
            and self._call_optional("should_compress_preflight", self._engine_copy())
            and not self._compact("maintenance", pressure)
        ):
            self._fail_closed_on_preflight_timeout(pressure)

    def _preflight_passes(self, pressure: int) -> None:
        """Up to ``max_attempts`` turn-start passes; another only while the last one made progress
        (fewer rows, or over 5% of the estimate cut) and ``should_compress`` still says so, and
        (newer upstream) it cut the estimate by over 5% with the request still over the threshold."""
        for _ in range(self.settings.attempts_per_turn):
            rows_before, pressure_before = len(self.working.peek()), pressure
            if not self._compact("preflight", pressure):
                self._fail_closed_on_preflight_timeout(pressure)
                return
            pressure = self._pressure()
            cut = pressure < PROGRESS_RATIO * pressure_before
            if not (len(self.working.peek()) < rows_before or cut):
                return
            if not self._required("should_compress", pressure):
                return
            if self.rules.preflight_needs_token_cut and not (cut and pressure >= self.engine.threshold_tokens):
                return

    def _failure_cooldown(self) -> bool:
        """Whether the engine reports an active compression-failure cooldown: the host then skips its
        turn-start and pre-API gates (``get_active_compression_failure_cooldown``, optional: the
        built-in compressor has it; an engine without it never blocks here)."""
        if not self._reports_cooldown:
            return False
        return bool(self._call_optional("get_active_compression_failure_cooldown"))

    def _fail_closed_on_preflight_timeout(self, request_tokens: int) -> None:
        """A turn-start pass that timed out ends the turn unless the request is known to fit the
        model window (docs/host-loop.md §Timeouts)."""
        if self._last_outcome != "timeout":
            return
        window = int(self.engine.context_length)
        if window <= 0 or request_tokens > window:
            self._turn_exit = COMPRESSION_TIMEOUT_EXIT

    def _pre_api_gate(self, pressure: int, rough: int) -> bool:
        if not self.settings.compression_enabled or len(self.working.peek()) <= 1:
            return False
        if self._attempts >= self.settings.attempts_per_turn:
            return False
        if self._anchor is None and self._defers and self._call_optional("should_defer_preflight_to_real_usage", rough):
            return False
        if self._failure_cooldown():
            return False
        return bool(self._required("should_compress", pressure))

    def _post_tool_gate(self) -> None:
        if not self.settings.compression_enabled:
            return
        pressure = self._post_tool_pressure()
        if not self.rules.post_tool_budget:
            # 0.19.0: no attempt budget, no wait for usage after a compaction, no pruning.
            if self._required("should_compress", pressure):
                self._compact("post_tool", pressure)
            return
        if (
            self._attempts < self.settings.attempts_per_turn
            and not self._awaiting_usage
            and self._required("should_compress", pressure)
        ):
            self._attempts += 1
            self._compact("post_tool", pressure)
            return
        if self.runner.prunes:
            self._prune(pressure)

    # ------------------------------------------------------------------ pressure

    def _pressure(self) -> int:
        """The host's pressure figure: the usage anchor plus rough rows since, else the rough
        request estimate floored at the last real prompt size (0.19.0: that estimate alone).

        Both estimate persisted rows, so reasoning a strict route never sends still counts: all of
        it in the rows since the anchor, the newest assistant turn's alone in the fallback (the
        host's ``charge_stale_thinking`` by route; ``docs/host-loop.md``)."""
        working = self.working
        if working.legacy is not None:
            return self._legacy_system[0] + working.legacy.persisted_tokens + self._legacy_tools
        if self._anchor is not None:
            value, at = self._anchor
            return value + working.rough_since(at) + working.stale_thinking_since(at)
        rough = self._rough_fixed + working.rough_total + working.newest_thinking
        return max(rough, self._real_floor)

    def _post_tool_pressure(self) -> int:
        if self._anchor is not None:
            return self._pressure()
        last = int(self.engine.last_prompt_tokens)
        if last > 0:
            return last
        if last == -1:
            return 0
        if self.working.legacy is not None:  # 0.19.0: the rows and the tools, no system prompt
            return self.working.legacy.persisted_tokens + self._legacy_tools
        return self._rough_fixed + self.working.rough_total + self.working.stale_thinking_total

    def _persisted_rough(self) -> int:
        """The host's rough estimate of the persisted rows alone (the turn-start pre-check's)."""
        working = self.working
        if working.legacy is not None:
            return working.legacy.persisted_tokens
        return working.rough_total + working.stale_thinking_total

    def _rough_request(self, history: list[Message]) -> int:
        """The rough request estimate over an arbitrary history (compaction before/after)."""
        if self.working.legacy is not None:
            legacy = self.working.legacy
            rows = legacy.persisted_tokens if history is self.working.peek() else legacy_messages_tokens(history)
            return self._legacy_system[0] + rows + self._legacy_tools
        if history is self.working.rows:
            return self._rough_fixed + self.working.rough_total
        working = self.working
        total = self._rough_fixed
        for m in history:
            i = working.position(m)  # the history's own rows keep their estimate
            total += working.row_counts(i)[2] if i is not None else self.memo.row(m)[2]
        return total

    def _rough_of_request(self, request: AssembledRequest) -> int:
        legacy = self.working.legacy
        if legacy is not None:  # 0.19.0: the request as built, system row included, rounded once
            if request.extends_history:
                return legacy.sent_tokens(self._legacy_system[1]) + self._legacy_tools
            return legacy_messages_tokens(request.messages) + self._legacy_tools
        if request.extends_history:
            return self._rough_fixed + self.working.rough_total
        skip = 1 if self.system_prompt and request.messages else 0
        if request.rough_total is not None:  # kept up to date row by row: no per-request sum
            return self._rough_fixed + request.rough_total - (self.assembler.prefix_rough if skip else 0)
        if request.message_rough is not None:
            return self._rough_fixed + sum(request.message_rough[skip:])
        return self._rough_fixed + self.memo.rough_counter.messages(request.messages[skip:])

    # ------------------------------------------------------------------ one request

    def _request(self, turn: Turn, step: Step, phase: str) -> dict[str, Any] | None:
        """One provider request; returns the usage passed to the engine (None: not sent, or no usage)."""
        self._tick(step.assistant_index)
        if self._turn_exit is not None:  # a turn-start pass timed out: nothing is sent this turn
            self._unsent(turn, step, phase, None)
            return None
        while True:
            self._repair_history()
            request = self._assemble()
            rough = self._rough_of_request(request)
            pressure = self._pressure() if self._anchor is not None else max(rough, self._real_floor)
            if self._pre_api_gate(pressure, rough):
                self._attempts += 1
                if self._compact("pre_api", pressure):
                    continue  # the host refunds the iteration and rebuilds the request
                if self._last_outcome == "timeout":
                    self._turn_exit = COMPRESSION_TIMEOUT_EXIT  # the pre-API timeout ends the turn
            break
        if self._turn_exit is not None:
            self._unsent(turn, step, phase, request)
            return None
        retries = self.events.retries.get(step.assistant_index, 0)
        invalid = int(request.invalid_selection)
        for _ in range(retries):
            # The recording says this request failed and was sent again: it is rebuilt, so
            # select_context runs once per attempt; the last attempt is what got the response.
            self._engine_ms += request.engine_ms
            request = self._assemble()
            invalid += int(request.invalid_selection)
        message_tokens = request.message_tokens
        tools_tokens = self.exact.tools(self.tools)
        prompt = self._prompt_tokens(request, tools_tokens)
        context_length = self.settings.context_length
        while prompt > context_length and self._attempts < self.settings.attempts_per_turn:
            # Context overflow (413 / context_length_exceeded): compress with the cooldown bypassed.
            self._attempts += 1
            if not self._compact("overflow", prompt, force=True):
                break
            self._repair_history()
            request = self._assemble()
            rough = self._rough_of_request(request)
            pressure = rough
            new_tokens = request.message_tokens
            new_prompt = self._prompt_tokens(request, tools_tokens)
            progressed = new_prompt < PROGRESS_RATIO * prompt
            message_tokens, prompt = new_tokens, new_prompt
            if not progressed:
                break

        assistant = self.transcript.messages[step.assistant_index]
        recorded = self.transcript.usage.get(step.assistant_index)
        completion = recorded.completion_tokens if recorded else self.memo.exact(self.memo.wire(assistant))
        prefix_tokens, prefix_messages = self._prefix(request)
        row = self._trace_row(
            turn,
            phase,
            request,
            prompt=prompt,
            rough=rough,
            pressure=pressure,
            over_threshold=pressure >= self.engine.threshold_tokens,
            completion=completion,
            prefix=(prefix_tokens, prefix_messages),
            sent=True,
            retries=retries,
            usage_reported=step.assistant_index not in self.events.usage_missing,
            invalid=invalid,
        )
        if self.observers:
            view = RequestView(
                turn=turn.index,
                request=self._request_index,
                timestamp=self.clock.now(),
                messages=request.messages,
                tools=self.tools,
                message_tokens=message_tokens,
                tools_tokens=tools_tokens,
                fixed_overhead_tokens=self.settings.fixed_overhead_tokens,
                prompt_tokens=prompt,
                history=self.working.snapshot(),  # observers keep it: O(1), not a list copy
                transcript_index=step.assistant_index,
                prefix_messages=prefix_messages,
                completion_tokens=completion,
                history_version=self.working.commits,  # a repair is not a rewrite by the engine
            )
            for observer in self.observers:
                row.update(observer.observe(view))
        reported = reported_prompt_tokens(
            self.settings.usage_model,
            exact=prompt,
            rough=rough,
            recorded=recorded.prompt_tokens if recorded else None,
            rewritten=self._rewritten,
        )
        row["usage_model"] = self.settings.usage_model
        row["usage_prompt_tokens"] = reported
        usage = self._usage(reported, completion, row, recorded.reasoning_tokens if recorded else 0)
        self._engine_ms += request.engine_ms
        row["engine_ms"] = self._engine_ms
        self.rows.append(row)  # the request was sent, whatever the engine does with its usage
        self._reset_row_state()
        started = self._engine_ms
        has_usage = row["usage_reported"]
        if has_usage:
            self._required("update_from_response", dict(usage))
        elif getattr(self.engine, "awaiting_real_usage_after_compression", False) is True:
            # No usage cannot judge the pending compaction; the host consumes the engine's marker.
            self._required("update_from_response", {})
        row["engine_ms"] += self._engine_ms - started
        self._engine_ms = 0.0
        rearm = self.rules.attempt_rearm and has_usage and self._pending_verdict
        if rearm and 0 < reported < self.engine.threshold_tokens:
            self._attempts = 0  # the host re-arms once a compaction is confirmed by real usage
        self._pending_verdict = False
        self._awaiting_usage = False

        self._append([self._made_assistant(assistant, step.assistant_index)])
        self._stamp(self.working.peek(), start=len(self.working.peek()) - 1)
        self._store_flush()
        if has_usage and self.rules.anchored_pressure:  # without usage the host keeps its previous anchor
            self._anchor = (reported + completion, len(self.working.peek()))
            self._real_floor = reported
        if step.tool_indices:
            for index in step.tool_indices:
                self._tick(index)
            start = len(self.working.peek())
            results = [self.transcript.messages[i] for i in step.tool_indices]
            if self._live_tools is not None:
                results, row["engine_tool_results"] = self._answer_engine_tools(assistant, results)
            self._append(self._made_results(assistant, results, step.tool_indices))
            self._stamp(self.working.peek(), start=start)
            self._store_flush()
            self._post_tool_gate()
        return usage if has_usage else None

    def _trace_row(
        self,
        turn: Turn,
        phase: str,
        request: AssembledRequest,
        *,
        prompt: int,
        rough: int,
        pressure: int,
        over_threshold: bool,
        completion: int,
        prefix: tuple[int, int],
        sent: bool,
        retries: int,
        usage_reported: bool,
        invalid: int,
    ) -> dict[str, Any]:
        """The host's columns of one trace row (sent or not); observers and usage add theirs after."""
        return {
            **self._labels,
            "turn": turn.index,
            "request": self._request_index,
            "phase": phase,
            "timestamp": self.clock.now(),
            "n_messages": len(request.messages),
            "prompt_tokens": prompt,
            "prompt_tokens_rough": rough,
            "pressure_tokens": pressure,
            "completion_tokens": completion,
            "threshold_tokens": int(self.engine.threshold_tokens),
            "context_length": self.settings.context_length,
            "over_threshold": over_threshold,
            "compressed": bool(self._row_triggers),
            "compress_trigger": "+".join(self._row_triggers) or None,
            "compression_count": int(self.engine.compression_count),
            "pruned": self._row_pruned,
            "select_context_used": request.selected,
            "select_context_rejected": request.rejection,
            "prefix_tokens": prefix[0],
            "prefix_messages": prefix[1],
            "violations": len(request.violations),
            "violation_rules": ";".join(sorted({v.rule for v in request.violations})) or None,
            "overflow": prompt > self.settings.context_length,
            "sent": sent,
            "exit_reason": None if sent else self._turn_exit,
            "retries": retries,
            "usage_reported": usage_reported,
            "invalid_results": invalid + self._row_invalid,
            "engine_tool_results": 0,
            "session_event": self._row_session,
            "history_repairs": self._row_repairs,
            "tool_outputs_spilled": 0,  # set when this request's results join (_made_results)
            "tool_loop_notes": 0,  # likewise
        }

    def _reset_row_state(self) -> None:
        self._row_triggers, self._row_pruned = [], False
        self._row_invalid, self._row_session = 0, None
        self._row_repairs = 0
        self._request_index += 1

    def _answer_engine_tools(self, assistant: Message, results: list[Message]) -> tuple[list[Message], int]:
        """Recorded results of the engine's own tools replaced by its live answers (engine_tools="live")."""
        assert self._live_tools is not None
        calls = self._live_tools.calls_to_answer(assistant)
        if not calls:
            return results, 0
        answered: list[Message] = []
        count = 0
        for message in results:
            call = calls.get(message.get("tool_call_id"))  # type: ignore[arg-type]
            if message.get("role") == "tool" and call is not None:
                started = time.perf_counter()
                content = self._live_tools.answer(call[0], call[1], clone_messages(self.history))
                self._engine_ms += (time.perf_counter() - started) * 1000
                message = {**message, "content": content}
                count += 1
            answered.append(message)
        return answered, count

    def _unsent(self, turn: Turn, step: Step, phase: str, request: AssembledRequest | None) -> None:
        """A recorded request the host never sent (its turn ended early). The row keeps what it would
        have held, flagged ``sent=False``; the recorded rows still join the history (open loop)."""
        if request is None:
            request = self.assembler.plain(self.working)
        prompt = self._prompt_tokens(request, self.exact.tools(self.tools))
        rough = self._rough_of_request(request)
        row = self._trace_row(
            turn,
            phase,
            request,
            prompt=prompt,
            rough=rough,
            pressure=max(rough, self._real_floor),
            over_threshold=rough >= self.engine.threshold_tokens,
            completion=0,
            prefix=(0, 0),
            sent=False,
            retries=0,
            usage_reported=False,
            invalid=int(request.invalid_selection),
        )
        row["usage_model"] = self.settings.usage_model
        row["usage_prompt_tokens"] = None
        row["engine_ms"] = self._engine_ms + request.engine_ms
        self.rows.append(row)
        self._engine_ms = 0.0
        self._reset_row_state()
        start = len(self.working.peek())
        for index in step.tool_indices:
            self._tick(index)
        assistant = self.transcript.messages[step.assistant_index]
        results = [self.transcript.messages[i] for i in step.tool_indices]
        made = self._made_assistant(assistant, step.assistant_index)
        self._append([made, *self._made_results(assistant, results, step.tool_indices)])
        self._stamp(self.working.peek(), start=start)

    def _assemble(self) -> AssembledRequest:
        # Only an engine that selects is shown the incoming message: the search is skipped otherwise.
        incoming = self.working.last_user() if self.assembler.selects else None
        return self.assembler.assemble(self.working, incoming, int(self.engine.context_length))

    def _prompt_tokens(self, request: AssembledRequest, tools_tokens: int) -> int:
        return request.message_tokens_total + tools_tokens + REPLY_PRIMING_TOKENS + self.settings.fixed_overhead_tokens

    def _prefix(self, request: AssembledRequest) -> tuple[int, int]:
        """Exact tokens (and messages) this request shares, from the start, with the previous one."""
        messages, tokens = request.messages, request.message_tokens
        previous = self._previous
        version = self.working.version if request.extends_history else -1
        total = request.message_tokens_total
        self._previous = (messages, self.tools, total, version)
        if previous is None:
            return 0, 0
        old_messages, old_tools, old_sum, old_version = previous
        if old_tools is not self.tools and old_tools != self.tools:
            return self.settings.fixed_overhead_tokens, 0
        shared = self.settings.fixed_overhead_tokens + self.exact.tools(self.tools)
        if version != -1 and version == old_version:
            # Same history, only appended to since: the whole previous request is the shared prefix.
            return shared + old_sum, len(old_messages)
        start = 0
        if request.continues is not None and request.continues[0] is old_messages:
            start = request.continues[1]  # leading messages known to be the previous request's objects
            shared += total - sum(tokens[start:])  # the tail is the few rows that changed
        # The run of the very same objects is found at C level (a selection repeats most of its
        # rows); only the rows after it are compared by value, one by one.
        olds, news = old_messages[start:], messages[start:]
        same = start + next(compress(count(), map(is_not, olds, news)), min(len(olds), len(news)))
        shared += sum(tokens[start:same])
        matched = same
        for old, new, n in zip(old_messages[same:], messages[same:], tokens[same:], strict=False):
            if old is not new and old != new:
                break
            shared += n
            matched += 1
        return shared, matched

    def _usage(self, prompt: int, completion: int, row: dict[str, Any], reasoning: int) -> dict[str, Any]:
        """The 8-key usage dict; cache buckets come from the first cache observer, if any."""
        read = int(row.get("cache_read_tokens") or 0)
        write = int(row.get("cache_write_tokens") or 0)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "input_tokens": max(0, prompt - read - write),
            "output_tokens": completion,
            "cache_read_tokens": read,
            "cache_write_tokens": write,
            "reasoning_tokens": int(reasoning),
        }

    # ------------------------------------------------------------------ compaction

    def _compact(
        self, trigger: str, current_tokens: int, *, focus_topic: str | None = None, force: bool = False
    ) -> bool:
        """One ``compress`` pass; commits the result under the host's rules. True when committed."""
        before = self.history
        rough_before = self._rough_request(before)
        result = self.runner.compress(
            self._engine_copy(), current_tokens=current_tokens, focus_topic=focus_topic, force=force, owned=True
        )
        self._after_pass(result)
        outcome, reason, new = self._judge(result, before, rough_before)
        self._last_outcome = outcome
        self._row_invalid += outcome == "invalid"
        reason = reason or engine_failure_note(self.engine) or (UNCHANGED if outcome == "noop" else None)
        rough_after = self._rough_request(new) if new is not None else rough_before
        self._record_pass(trigger, focus_topic, outcome, reason, before, new, rough_before, rough_after, result)
        if new is None:
            return False
        # Read before the boundary's hooks, as upstream does: an engine may reset its flags in them.
        verdict = self._made_progress()
        progressed = getattr(self.engine, "_last_compression_made_progress", False) is True
        used_fallback = bool(getattr(self.engine, "_last_summary_fallback_used", False))
        # The history the session store hands the engine (the pre-pass rows, its pristine copies).
        ended = self._engine_copy() if self.settings.session_store and self._ends_sessions else None
        self._commit(new, trigger)
        self._compaction_boundary(ended)
        self._engine_after_compaction(rough_after, progressed, used_fallback)
        self._awaiting_usage = True
        self._pending_verdict = verdict
        return True

    def _compaction_boundary(self, ended: list[Message] | None) -> None:
        """The session hooks of a committed compaction, in upstream's order (``compress_context``,
        0.19.0 ``agent/conversation_compression.py``; docs/host-loop.md §Sessions): with a session
        store, ``commit_memory_session`` hands the engine the history as it was before the pass
        (``ended``: ``on_session_end``), then the boundary is announced (``on_session_start``)."""
        if ended is not None:
            self._call_optional("on_session_end", self.session_id, ended)
        if self._session_hooks:
            self._call_optional(
                "on_session_start",
                self.session_id,
                boundary_reason="compression",
                old_session_id=self.session_id,  # compaction rewrites the session in place
                platform=HOST_PLATFORM,
                conversation_id=None,
            )

    def _engine_after_compaction(self, rough_after: int, progressed: bool, used_fallback: bool) -> None:
        """What upstream's ``compress_context`` sets on the engine once a compaction is committed
        (``agent/conversation_compression.py``, 0.19.0 and newer; docs/host-loop.md): no real usage
        yet, and the rough size of the compacted request, which the compressor's preflight deferral
        compares later estimates with. An engine that keeps these itself (the built-in port) gets
        the same values; one that refuses an attribute (slots, a read-only property) is told once."""
        engine = self.engine
        engine.last_prompt_tokens = -1
        settings: list[tuple[str, object]] = [
            ("last_compression_rough_tokens", rough_after),
            ("last_completion_tokens", 0),
            ("awaiting_real_usage_after_compression", True),
        ]
        # A pass the engine says made progress arms its effectiveness verdict: the engine's own
        # ``record_completed_compaction`` (the compressor's, which also keeps its fallback streak),
        # else the flag it reads at the next usage report.
        if progressed:
            record = getattr(type(engine), "record_completed_compaction", None)
            if callable(record):
                record(engine, used_fallback=used_fallback)
            else:
                settings.append(("_verify_compaction_cleared_threshold", True))
        for name, value in settings:
            try:
                setattr(engine, name, value)
            except AttributeError as error:
                message = f"the host could not set {name} on the engine after a compaction: {error}"
                if message not in self.warnings:
                    log.warning(message)
                    self.warnings.append(message)

    def _made_progress(self) -> bool:
        """Whether a committed pass may re-arm the per-turn attempts: the engine's own progress flag
        when it keeps one (the built-in compressor), else the structural proof that the committed
        rewrite changed the history, as upstream does since #103355 (docs/host-loop.md §Per-turn
        attempts)."""
        flag = getattr(self.engine, "_last_compression_made_progress", None)
        return flag if isinstance(flag, bool) else True

    def _judge(
        self, result: PassResult, before: list[Message], rough_before: int
    ) -> tuple[str, str | None, list[Message] | None]:
        if result.outcome != "changed" or result.messages is None:
            if result.outcome in ("error", "timeout", "invalid"):
                self.warnings.append(f"compress {result.outcome}: {result.reason}")
            return result.outcome, result.reason, None
        adopted = self.working.engine_views().adopt(result.messages)
        if adopted == before:
            # Upstream rejects an unchanged transcript before the boundary: nothing is committed and
            # the re-arm latch stays down (docs/host-loop.md §Per-turn attempts).
            return "noop", UNCHANGED, None
        new = ensure_user_turn(adopted, before)
        rough_after = self._rough_request(new)
        if self.rules.growth_guard and rough_after > rough_before:
            return "grew", f"rough size grew from {rough_before} to {rough_after}", None
        return "committed", None, new

    def _prune(self, pressure: int) -> None:
        before = self.history
        result = self.runner.prune(self._engine_copy(), current_tokens=pressure, owned=True)
        self._after_pass(result)
        if result.outcome == "noop":
            return
        # Estimated only when something is recorded: most post-tool prunes are no-ops.
        rough_before = self._rough_request(before)
        changed = result.outcome == "changed" and result.messages
        new = self.working.engine_views().adopt(result.messages) if changed and result.messages else None
        outcome = "committed" if new is not None else result.outcome
        self._row_invalid += outcome == "invalid"
        rough_after = self._rough_request(new) if new is not None else rough_before
        self._record_pass("prune", None, outcome, result.reason, before, new, rough_before, rough_after, result)
        if new is not None:
            self._commit(new, None)
            self._row_pruned = True

    def _micro_compact(self) -> None:
        """The built-in compressor's opt-in micro-compaction after a completed turn (upstream's turn
        finalizer, ``docs/compressor.md``): a changed list replaces the history; a failure is logged."""
        run = micro_pass(self.engine)
        if run is None:
            return
        before, given = self.history, self._engine_copy()
        started = time.perf_counter()
        try:
            out = run(given)
        except Exception as error:
            message = f"micro-compaction raised {type(error).__name__}: {error} (ignored, as the host does)"
            log.warning(message)
            self.warnings.append(message)
            return
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self._engine_ms += elapsed
        if out is given:
            return
        rows = isinstance(out, list) and all(isinstance(m, dict) for m in out)
        problem = row_problem(out) if rows else "not a list of message dicts"
        if problem is not None:
            self.warnings.append(f"micro-compaction result ignored: {problem}")
            return
        new = self.working.engine_views().adopt(out)
        rough_before, rough_after = self._rough_request(before), self._rough_request(new)
        result = PassResult("changed", out, 0, elapsed)
        self._record_pass("micro", None, "committed", None, before, new, rough_before, rough_after, result)
        self._commit(new, "micro")

    def _repair_history(self) -> None:
        """The host's repair of its persisted history, run before each request is built (not before
        a retry, which resends the request built once; ``docs/host-loop.md`` §History repair)."""
        repair = self.working.repair(self._corruption_marker)
        if repair is None:
            return
        self._stamp(self.working.peek(), start=repair.first_changed)
        self._row_repairs += repair.repairs
        if self._anchor is not None and repair.first_changed < self._anchor[1] - 1:
            # The priced rows changed (the newest reply itself is not priced: the anchor's
            # completion covers it), so the usage no longer describes them: fall back, as the
            # host's fingerprinted anchor does.
            self._anchor = None

    def _stamp(self, rows: list[Message], start: int = 0) -> None:
        """The host's message and tool-call uids on rows from ``start`` on (newer hosts; 0.19.0 has none)."""
        if self.rules.message_uids:
            stamp_identity(rows, self.minter, start=start)

    def _store_flush(self) -> None:
        """The session store writes the rows it has not written yet: before the turn's first request,
        after a reply and after its tool results (0.19.0 ``agent/turn_context.py``, the tool-call flush
        in ``agent/conversation_loop.py``, ``agent/tool_executor.py``). 0.19.0 stamps each row it
        writes with ``_db_persisted``, in place: its estimates count the key, and engines get it."""
        legacy = self.working.legacy
        if not self._store_stamps or legacy is None:
            return
        rows = self.working.peek()
        for row in rows[legacy.stamped :]:
            row[DB_PERSISTED_KEY] = True
        legacy.stamp_all()

    def _engine_copy(self) -> list[Message]:
        """The engine's private copy of the history (per-row copies reused while pristine)."""
        return self.working.engine_views().conversation()

    def _after_pass(self, result: PassResult) -> None:
        self._engine_ms += result.duration_ms
        if result.outcome == "timeout":
            self.working.engine_views().invalidate()  # the abandoned pass may still hold the copies

    def _made_assistant(self, assistant: Message, index: int) -> Message:
        """The row the host keeps of a recorded reply (its content flattened, stripped of inline
        reasoning blocks, stripped and redacted; its bookkeeping keys: ``docs/host-loop.md``
        §Assistant rows). Observers hear of it when its content changed: the keys never reach the wire."""
        if self._hermes_recording:
            return assistant
        made = made_assistant(assistant)
        recorded = assistant.get("content")
        if made is not assistant and not (type(recorded) is str and made["content"] == recorded):
            self._tell_rows_made({index: made})
        return made

    def _tell_rows_made(self, rows: dict[int, Message]) -> None:
        for observer in self.observers:
            rows_made = getattr(observer, "rows_made", None)
            if callable(rows_made):
                rows_made(rows)

    def _made_results(self, assistant: Message, results: list[Message], indices: Sequence[int]) -> list[Message]:
        """The rows the host makes from the recorded outputs of ``assistant``'s calls (its budget
        scaled to the engine's window, as the host reads it at each batch). Observers that define
        ``rows_made`` are told which transcript rows went in with other content (spilled or wrapped
        outputs): the probe does not count what a spill took out as lost by the engine."""
        if not self._makes_tool_results or not results:
            return results
        results, indices = in_call_order(assistant, results, indices)
        maker = self._tool_results
        window = int(self.engine.context_length)
        if window != self._tool_window:  # scaled again only when the engine's window changes
            self._tool_window = window
            maker.budget = ToolResultBudget.for_window(window)
        spilled, notes = maker.spilled, maker.guard.fired if maker.guard is not None else 0
        made = maker.make(assistant, results)
        if self.rows:  # the request these answer
            self.rows[-1]["tool_outputs_spilled"] += maker.spilled - spilled
            if maker.guard is not None:
                self.rows[-1]["tool_loop_notes"] += maker.guard.fired - notes
        changed = {
            index: row
            for index, given, row in zip(indices, results, made, strict=True)
            if row.get("content") is not given.get("content")
        }
        if changed:
            self._tell_rows_made(changed)
        return made

    def _append(self, recorded: list[Message]) -> None:
        """Append clones of recorded rows (the host owns its copies; the transcript stays untouched)."""
        self.working.append(recorded)

    def _commit(self, new: list[Message], trigger: str | None) -> None:
        self._rewritten = True  # recorded usage no longer describes any later request
        self._stamp(new)
        self.working.replace(new)
        self._anchor = None  # the recorded usage no longer describes this history
        self._real_floor = 0
        if trigger:
            self._row_triggers.append(trigger)

    def _fresh_wires(self, before: list[Message], new: list[Message]) -> list[Message]:
        """Wire forms of the rows of ``new`` whose content (as sent: metadata keys a compaction adds,
        such as ``_compaction_tail``, are not new content) no row of ``before`` has.

        A row of ``new`` that is a row of ``before`` itself is not new; the others (a prune's few
        cleared rows, a summary) are compared with the old rows as sent, first at C level with
        ``==`` and then by their frozen form (which also tells key orders apart), so a commit
        costs no freeze of every history row."""
        old_ids = set(map(id, before))
        candidates = [self.memo.wire(m) for m in new if id(m) not in old_ids]
        if not candidates:
            return []
        # The history's own wire forms when ``before`` is the history (the pass ran on it).
        old_wires = self.working.wires if before is self.working.peek() else [self.memo.wire(m) for m in before]
        if len(candidates) > _FEW_CANDIDATES:  # many new rows: one set of frozen forms instead
            old_keys = set(map(freeze, old_wires))
            return [w for w in candidates if freeze(w) not in old_keys]
        fresh = []
        for wire in candidates:
            key = None
            for old in compress(old_wires, map(eq, repeat(wire), old_wires)):
                key = freeze(wire) if key is None else key
                if freeze(old) == key:
                    break
            else:
                fresh.append(wire)
        return fresh

    def _record_pass(
        self,
        trigger: str,
        focus_topic: str | None,
        outcome: str,
        reason: str | None,
        before: list[Message],
        new: list[Message] | None,
        rough_before: int,
        rough_after: int,
        result: PassResult,
    ) -> None:
        summary_tokens = 0
        if new is not None:
            fresh = self._fresh_wires(before, new)
            summary_tokens = sum(map(self.memo.exact, fresh))
        self.compaction_rows.append(
            {
                **self._labels,
                "turn": self._turn_index,
                "request": self._request_index,
                "trigger": trigger,
                "focus_topic": focus_topic,
                "outcome": "committed" if new is not None else outcome,
                "reason": reason,
                "tokens_before": rough_before,
                "tokens_after": rough_after,
                "messages_before": len(before),
                "messages_after": len(new) if new is not None else len(before),
                "summary_tokens": summary_tokens,
                "duration_ms": result.duration_ms,
            }
        )

    # ------------------------------------------------------------------ helpers

    def _tick(self, message_index: int) -> None:
        stamp = self.transcript.timestamps.get(message_index)
        if stamp is not None:
            self.clock.set(stamp)
        elif self.transcript.messages[message_index].get("role") == "assistant":
            self.clock.advance(self.settings.request_gap_s)

    def _required(self, method: str, *args: Any) -> Any:
        """Call a required engine method; an exception fails the run (with the method named)."""
        started = time.perf_counter()
        try:
            return getattr(self.engine, method)(*args)
        except Exception as error:
            raise EngineFailure(f"engine.{method} raised {type(error).__name__}: {error}") from error
        finally:
            self._engine_ms += (time.perf_counter() - started) * 1000

    def _call_optional(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an optional hook as the host does: exceptions are logged and swallowed."""
        started = time.perf_counter()
        try:
            return hook(self.engine, method)(*args, **kwargs)  # an older host ABC may lack the hook
        except Exception as error:
            message = f"engine.{method} raised {type(error).__name__}: {error} (ignored, as the host does)"
            log.warning(message)
            self.warnings.append(message)
            return None
        finally:
            self._engine_ms += (time.perf_counter() - started) * 1000


class _NoManual:
    pass


_NO_MANUAL: Any = _NoManual()


def run_replay(
    transcript: Transcript,
    engine: ContextEngine,
    settings: HostSettings,
    *,
    engine_label: str,
    params_label: str,
    observers: Iterable[RequestObserver] = (),
    counter: ExactCounter | None = None,
) -> ReplayResult:
    """Replay ``transcript`` through ``engine`` (an instance this run owns)."""
    host = ReplayHost(
        transcript,
        engine,
        settings,
        engine_label=engine_label,
        params_label=params_label,
        observers=[o.clone() for o in observers],
        counter=counter,
    )
    return host.run()


def in_call_order(
    assistant: Message, results: list[Message], indices: Sequence[int]
) -> tuple[list[Message], list[int]]:
    """The recorded results (and their transcript indices) in the order of ``assistant``'s calls: the
    host runs the calls and appends each result in call order, where a recording may list them as
    they finished (a Claude Code log does). A row answering no call goes last, as recorded (the host
    never made it; its repair drops it)."""
    position = {call.get("id"): k for k, call in enumerate(tool_calls(assistant))}
    unanswered = len(position)
    keys = [position.get(row.get("tool_call_id"), unanswered) for row in results]
    if keys == sorted(keys):
        return results, list(indices)
    order = sorted(range(len(results)), key=keys.__getitem__)  # stable: repeated ids keep their order
    return [results[k] for k in order], [indices[k] for k in order]


def engine_failure_note(engine: ContextEngine) -> str | None:
    """Why the engine's last ``compress`` fell back or did nothing, when it says (an optional
    ``last_failure`` attribute, e.g. the compressor's summarizer failure), for the compactions frame."""
    failure = getattr(engine, "last_failure", None)
    if failure is None or failure == "":
        return None
    return f"summarizer failed: {failure}"
