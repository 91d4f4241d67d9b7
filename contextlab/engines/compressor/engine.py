"""``compressor``: a faithful port of the Hermes host's built-in context compressor.

Rule for rule after ``host-contract.md`` §2: threshold and budgets (:mod:`.budgets`), the
``compress()`` pipeline (tool-output pruning → boundaries → summary rehydration → summary →
assembly → sanitation), anti-thrash strikes and failure cooldowns on the virtual clock
(:mod:`.antithrash`), ``prune_tool_results_only`` and the preflight deferral. Summaries come from a
pluggable summarizer: the offline ``extractive`` one by default, or ``llm`` (any OpenAI-compatible
endpoint behind an on-disk record/replay cache).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from contextlab.engine import ContextEngine, Message, match_model_threshold
from contextlab.engines.compressor import assembly, boundaries, budgets, inflight, lean, pruning, rules
from contextlab.engines.compressor.antithrash import AntiThrash, StoredThrash
from contextlab.engines.compressor.micro import DEFAULT_DEFRAG_THRESHOLD_TOKENS, MicroCompactor
from contextlab.engines.summarizers.base import FailureKind, Summarizer, SummaryFailure, SummaryRequest
from contextlab.engines.summarizers.extractive import (
    NO_USER_TURNS,
    ExtractiveSummarizer,
    extract,
    previous_items,
    render,
    task_snapshot,
)
from contextlab.engines.summarizers.prompt import build_prompt
from contextlab.engines.summarizers.template import FALLBACK_TEMPLATE, HOST_TEMPLATE, SummaryTemplate
from contextlab.errors import EngineError
from contextlab.messages import content_text
from contextlab.reasoning import stale_thinking_reaches_wire
from contextlab.redact import redact
from contextlab.tokens import RoughCounter

FALLBACK_MAX_CHARS = 8_000
AUTO_FOCUS_LEAD = "Recent user focus:"
AUTO_FOCUS_TURNS = 3
AUTO_FOCUS_TURN_CHARS = 260
AUTO_FOCUS_TOTAL_CHARS = 700
TOO_SMALL_EXTRA = 3 + 1
DEFER_MIN_GROWTH = 4_096
DEFER_GROWTH_FRACTION = 0.05
PRUNE_MIN_RESULT_FLOOR = 200
SNAPSHOT_HEADING = "Historical Task Snapshot"


def make_summarizer(spec: str | Summarizer, options: Mapping[str, Any] | None = None) -> Summarizer:
    """A summarizer from a name (``"extractive"``, ``"llm"``) or an instance."""
    if not isinstance(spec, str):
        if not isinstance(spec, Summarizer):
            raise EngineError(f"summarizer {spec!r} has no summarize(request) method")
        return spec
    if spec == "extractive":
        return ExtractiveSummarizer()
    if spec == "llm":
        from contextlab.engines.summarizers.llm import LLMSummarizer

        return LLMSummarizer(**dict(options or {}))
    raise EngineError(f"unknown summarizer {spec!r}; expected 'extractive' or 'llm'")


class CompressorEngine(ContextEngine):
    """The host's default engine: summarise the middle of the conversation when it passes the threshold.

    Args:
        context_length: The window (usually set later by the host through ``update_model``).
        threshold_percent: Fraction of the window that triggers compaction (raised to 0.75 below 512K).
        protect_first_n: Head messages kept verbatim until the first compaction.
        protect_last_n: Drives the protected-tail floor.
        summary_target_ratio: Tail budget as a fraction of the threshold (clamped 0.10–0.80).
        tail_mode: ``"legacy"`` (upstream: ratio × threshold) or ``"lean"`` (opt-in, from a fork and
            not in upstream: 2.5% of the window, 10K–25K, stale-tail stubs, augmented summaries).
        max_tokens: Output reservation subtracted from the window (positive ints only).
        threshold_tokens_cap: ``compression.threshold_tokens``: an absolute cap on the threshold.
        model_thresholds: ``{model substring or "provider:substr": percent}`` overrides.
        abort_on_summary_failure: Return the input unchanged instead of a fallback summary.
        proactive_prune_tokens: Gate of ``prune_tool_results_only`` (0 disables it).
        proactive_prune_min_result_chars: Results longer than this are pruned there (floor 200).
        proactive_prune_min_reclaim_tokens: ``prune_tool_results_only`` commits only above this.
        min_tail_user_messages: Real user messages the tail must keep.
        summarizer: ``"extractive"`` (default), ``"llm"``, or a summarizer instance.
        summarizer_options: Keyword arguments for the ``llm`` summarizer.
        hermes_rules: ``"newest"`` (upstream ``0000416b`` plus the newer upstream rules) or ``"0.19.0"``
            (each rule that changed since PyPI ``hermes-agent`` 0.19.0 switched back; ``docs/compressor.md``).
        micro_compact: ``compression.micro_compact``: fold one exchange per completed turn into a
            rolling summary (off by default, as upstream; :mod:`.micro`).
        micro_compact_every_n_turns: A micro pass every Nth completed turn (at least 1).
        micro_compact_defrag_threshold_tokens: Rolling-summary size that triggers its rewrite.
    """

    protect_first_n = 3
    protect_last_n = 20
    threshold_percent = 0.50

    def __init__(
        self,
        context_length: int = 0,
        threshold_percent: float = 0.50,
        protect_first_n: int = 3,
        protect_last_n: int = 20,
        summary_target_ratio: float = 0.20,
        tail_mode: str = "legacy",
        max_tokens: int | None = None,
        threshold_tokens_cap: int | None = None,
        model_thresholds: Mapping[str, float] | None = None,
        abort_on_summary_failure: bool = False,
        proactive_prune_tokens: int = 0,
        proactive_prune_min_result_chars: int = 8_000,
        proactive_prune_min_reclaim_tokens: int = 4_096,
        min_tail_user_messages: int = 1,
        summarizer: str | Summarizer = "extractive",
        summarizer_options: Mapping[str, Any] | None = None,
        hermes_rules: str = "newest",
        micro_compact: bool = False,
        micro_compact_every_n_turns: int = 1,
        micro_compact_defrag_threshold_tokens: int = DEFAULT_DEFRAG_THRESHOLD_TOKENS,
    ) -> None:
        if tail_mode not in budgets.TAIL_MODES:
            raise EngineError(f"tail_mode must be one of {budgets.TAIL_MODES}, got {tail_mode!r}")
        self.threshold_percent = float(threshold_percent)
        self.protect_first_n = int(protect_first_n)
        self.protect_last_n = int(protect_last_n)
        self.summary_target_ratio = budgets.clamp_target_ratio(summary_target_ratio)
        self.tail_mode = tail_mode
        self.hermes_rules = hermes_rules
        self.rules = rules.resolve(hermes_rules)
        self.max_tokens = max_tokens
        self.threshold_tokens_cap = threshold_tokens_cap
        self.model_thresholds: dict[str, float] = dict(model_thresholds or {})
        self.abort_on_summary_failure = _flag("abort_on_summary_failure", abort_on_summary_failure)
        self.proactive_prune_tokens = int(proactive_prune_tokens)
        self.proactive_prune_min_result_chars = max(PRUNE_MIN_RESULT_FLOOR, int(proactive_prune_min_result_chars))
        self.proactive_prune_min_reclaim_tokens = int(proactive_prune_min_reclaim_tokens)
        self.min_tail_user_messages = int(min_tail_user_messages)
        self.summarizer = make_summarizer(summarizer, summarizer_options)
        self.template: SummaryTemplate = HOST_TEMPLATE
        self.micro_compact = _flag("micro_compact", micro_compact)
        self.micro = MicroCompactor(micro_compact_every_n_turns, micro_compact_defrag_threshold_tokens)

        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.last_real_prompt_tokens = 0
        self.compression_count = 0
        self.awaiting_real_usage_after_compression = False
        self.thrash = AntiThrash()
        self._rough = RoughCounter()
        self._verify_compaction_cleared_threshold = False
        self._previous_summary: str | None = None
        # The preflight deferral's two rough baselines, under upstream's names: the rough size of the
        # compacted request (set by the host once it commits a compaction) and of the last request
        # the provider proved fit under the threshold.
        self.last_compression_rough_tokens = 0
        self.last_rough_tokens_when_real_prompt_fit = 0
        self._model_key: tuple[str, str, str, str] | None = None
        self._stale_thinking_on_wire = False  # set by update_model from the route
        self._last_compress_aborted = False
        self._last_fallback_used = False
        self._last_summary_fallback_used = False  # upstream's name, read by the host after a commit
        self.last_failure: SummaryFailure | None = None
        self.last_savings_percent = 0.0
        self._last_compression_made_progress = False
        self._prune_rearm_tokens = 0
        self._session_id = ""
        self._stored: StoredThrash | None = None  # what the host's session store keeps across a boundary
        self.tail_token_budget = 0
        self.max_summary_tokens = 0
        self.context_length = int(context_length)
        if self.context_length:
            self._derive(self.threshold_percent)

    @property
    def name(self) -> str:
        return "compressor"

    # ------------------------------------------------------------------ thresholds

    def _derive(self, percent: float) -> None:
        self.threshold_tokens = budgets.compute_threshold(
            self.context_length, percent, max_tokens=self.max_tokens, cap=self.threshold_tokens_cap
        )
        self.max_summary_tokens = budgets.max_summary_tokens(self.context_length)
        self.tail_token_budget = budgets.tail_token_budget(
            self.threshold_tokens,
            self.context_length,
            mode=self.tail_mode,
            target_ratio=self.summary_target_ratio,
        )

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        """Re-derive every budget from the configured percent (snapshotted once) for a new window."""
        if not hasattr(self, "_config_threshold_percent"):
            self._config_threshold_percent = float(self.threshold_percent)
        self.context_length = int(context_length)
        override = match_model_threshold(self.model_thresholds, model, provider)
        pct = override if override is not None else self._config_threshold_percent
        self.threshold_percent = pct
        self._derive(pct)
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.last_real_prompt_tokens = 0
        self.last_rough_tokens_when_real_prompt_fit = 0
        self.last_compression_rough_tokens = 0
        self.awaiting_real_usage_after_compression = False
        self.thrash.reset_strikes()
        self._prune_rearm_tokens = 0  # the runway was measured against the previous trigger
        # Whether old turns' reasoning rides the requests (an echo route): the tail walks charge it then.
        self._stale_thinking_on_wire = stale_thinking_reaches_wire(provider, model, base_url, api_mode)
        key = (model, provider, base_url, api_mode)
        if self._model_key is not None and key != self._model_key:
            self.thrash.fallback_streak = 0
            self.thrash.clear_cooldown()
            self.thrash.timeout_failures = 0
        self._model_key = key

    # ------------------------------------------------------------------ usage and gates

    def update_from_response(self, usage: dict[str, Any]) -> None:
        """Record real usage; decide the pending anti-thrash verdict of the last compaction."""
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        self.last_prompt_tokens = prompt
        self.last_completion_tokens = completion
        self.last_total_tokens = int(usage.get("total_tokens") or prompt + completion)
        if prompt > 0:
            self.last_real_prompt_tokens = prompt
            if prompt < self.threshold_tokens:
                # The first fitting reading after a commit proves the compacted request fits: its
                # rough size becomes the baseline later estimates are compared with.
                if self.awaiting_real_usage_after_compression and self.last_compression_rough_tokens > 0:
                    self.last_rough_tokens_when_real_prompt_fit = self.last_compression_rough_tokens
                self.thrash.reset_strikes()
            else:
                self.last_rough_tokens_when_real_prompt_fit = 0  # a reading over the line breaks the ratchet
            if self._verify_compaction_cleared_threshold:
                if prompt >= self.threshold_tokens:
                    self.thrash.strike()
                else:
                    self.thrash.reset_strikes()
        self._verify_compaction_cleared_threshold = False
        self.awaiting_real_usage_after_compression = False

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return self.should_compress_info(prompt_tokens)[0]

    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """``(tokens ≥ threshold and not blocked, reason when blocked over threshold)``."""
        tokens = self.last_prompt_tokens if prompt_tokens is None else int(prompt_tokens)
        if tokens < self.threshold_tokens:
            return False, None
        reason = self.thrash.blocked_reason()
        return (reason is None), reason

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """Skip a noisy rough estimate and wait for real usage (``host-contract.md`` §2c)."""
        rough = int(rough_tokens)
        if rough < self.threshold_tokens:
            return False
        if self.awaiting_real_usage_after_compression:
            return True
        real = self.last_real_prompt_tokens
        if real <= 0 or real >= self.threshold_tokens:
            return False
        baseline = self.last_rough_tokens_when_real_prompt_fit or self.last_compression_rough_tokens
        if baseline <= 0:
            return False
        if rough - baseline > max(DEFER_MIN_GROWTH, int(DEFER_GROWTH_FRACTION * self.threshold_tokens)):
            return False
        # A deferred estimate ratchets the baseline up: the next one is compared with this one.
        self.last_rough_tokens_when_real_prompt_fit = max(baseline, rough)
        return True

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        super().on_session_start(session_id, **kwargs)
        self._session_id = str(session_id or "")
        stored, self._stored = self._stored, None
        if kwargs.get("boundary_reason") != "compression":
            return
        # Upstream rebinds the session (``bind_session_state``: the timeout ladder and the cooldown
        # cleared, then what the session store holds for it read back) and restores the parent's
        # fallback streak, and under the newest rules its ineffective strikes too. Without a store
        # (no ``on_session_end`` came first) the in-memory values are the parent's.
        self.thrash.timeout_failures = 0
        self.thrash.cooldown_until = stored.cooldown_until if stored else 0.0
        if stored is not None:
            self.thrash.fallback_streak = stored.fallback_streak
            if self.rules.boundary_keeps_strikes:
                self.thrash.ineffective = stored.ineffective

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        """Clear the per-session compaction state, as upstream does at every session end, which its
        host also reaches at each committed compaction when it keeps a session store
        (``commit_memory_session``; docs/host-loop.md §Sessions). What that store keeps of the
        session (the fallback streak, the ineffective strikes, the failure cooldown) is remembered
        for a compaction boundary's ``on_session_start`` to read back."""
        super().on_session_end(session_id, messages)
        thrash = self.thrash
        self._stored = StoredThrash(thrash.fallback_streak, thrash.ineffective, thrash.cooldown_until)
        self._clear_compaction_state()
        thrash.timeout_failures = thrash.ineffective = thrash.fallback_streak = 0
        thrash.cooldown_until = 0.0
        self._last_fallback_used = self._last_summary_fallback_used = self._last_compress_aborted = False
        self.last_failure = None

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self._prune_rearm_tokens = 0
        self._clear_compaction_state()
        self.thrash.clear()
        self.micro.reset()

    def _clear_compaction_state(self) -> None:
        """What a session end and a reset both clear: the previous summary, the verdict and
        progress flags, and the usage the compressor waits for and compares with."""
        self._previous_summary = None
        self._verify_compaction_cleared_threshold = False
        self._last_compression_made_progress = False
        self.awaiting_real_usage_after_compression = False
        self.last_real_prompt_tokens = 0
        self.last_compression_rough_tokens = 0
        self.last_rough_tokens_when_real_prompt_fit = 0

    # ------------------------------------------------------------------ boundaries

    def effective_protect_first_n(self, messages: list[Message]) -> int:
        """``protect_first_n``, decayed to 0 after the first compaction (or with a previous summary), or
        when an early handoff shows a resumed compacted session (upstream ``_effective_protect_first_n``)."""
        if self.compression_count > 0 or self._previous_summary:
            return 0
        if not self.rules.head_restart_probe or self.protect_first_n <= 0:
            return self.protect_first_n
        offset = 1 if messages and messages[0].get("role") == "system" else 0
        early = messages[offset : offset + self.protect_first_n + 4]
        if any(assembly.is_handoff(m) for m in early):
            return 0
        return self.protect_first_n

    def head_size(self, messages: list[Message]) -> int:
        system = 1 if messages and messages[0].get("role") == "system" else 0
        return system + self.effective_protect_first_n(messages)

    def _bounds(self, messages: list[Message]) -> tuple[int, int]:
        start = boundaries.align_forward(messages, self.head_size(messages))
        costs = budgets.walk_rule(
            messages,
            ceil=self.rules.budget_estimate_ceil,
            charge_all_thinking=self._stale_thinking_on_wire or not self.rules.newest_turn_thinking,
        ).costs(messages)
        end = boundaries.tail_cut_by_tokens(
            messages,
            start,
            self.tail_token_budget,
            protect_last_n=self.protect_last_n,
            min_tail_user_messages=self.min_tail_user_messages,
            costs=costs,
            user_anchor=assembly.is_real_user_turn if self.rules.real_user_filter else assembly.is_user_anchor_0_19_0,
        )
        if not self.rules.bridge_pullback:
            return start, end
        return start, boundaries.pull_back_to_bridge(messages, start, end)

    def has_content_to_compress(self, messages: list[Message]) -> bool:
        start, end = self._bounds(messages)
        return start < end

    # ------------------------------------------------------------------ compress

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[Message]:
        """One compaction pass (``host-contract.md`` §2d, upstream ``compress``).

        A no-op (too few messages, no compressible window, a window of handoffs only) arms the newer
        upstream's temporary structural backoff (#93022) and returns the input itself, lossless. Under
        ``hermes_rules="0.19.0"`` it records one ineffective strike instead and, past the pruning
        phase, returns the pruned list (the host's no-op return, which its wrapper commits when it
        differs). An aborted summary returns the input: upstream's wrapper discards the returned list.
        """
        self._last_compress_aborted = False
        self._last_fallback_used = False
        self._last_summary_fallback_used = False
        self._last_compression_made_progress = False
        self.last_failure = None
        if force:
            self.thrash.clear_cooldown()
            self.thrash.clear_structural()
        if len(messages) <= self.head_size(messages) + TOO_SMALL_EXTRA:
            return self._no_op(messages, messages)

        # Phase 1: tool-output pruning (no LLM), then drop platform echoes after the newest ask.
        pruned = pruning.prune_tool_outputs(
            messages,
            protect_tail_count=self.protect_last_n,
            protect_tail_tokens=self.tail_token_budget,
            rules=self.rules,
            stale_thinking_on_wire=self._stale_thinking_on_wire,
        )
        work = pruned.messages
        if self.rules.drop_platform_echoes:
            work = pruning.remove_platform_echoes(work, boundaries.last_real_user(work))

        start, end = self._bounds(work)
        if start >= end:
            return self._no_op(messages, work)
        if self.tail_mode == "lean":
            work = lean.demote_stale_tail_tools(work, end, self._session_id)

        # Rehydrate earlier summaries into the previous summary; handoff rows leave the window.
        rollback = self._previous_summary
        window = self._rehydrate(work, start, end)
        if window is None:
            return self._no_op(messages, work)
        turns, found_at, tail_start, first_index = window

        # The summary.
        middle = (
            self._rough.messages(turns)
            if self.rules.rough_skips_persistence_keys
            else budgets.rough_messages_0_19_0(turns)
        )
        budget = budgets.summary_budget(middle, self.max_summary_tokens)
        request = SummaryRequest(
            turns=turns,
            budget_tokens=budget,
            template=self.template,
            previous_summary=self._previous_summary,
            focus_topic=focus_topic or None,
            auto_focus=None if focus_topic else auto_focus(work),
            memory_context=memory_context,
            first_index=first_index,
            merge_mode="anchored",
        )
        request = dataclasses.replace(request, prompt=build_prompt(request, lean=self.tail_mode == "lean"))
        body: str | None
        try:
            body = self.summarizer.summarize(request)
            if not body or not body.strip():
                raise SummaryFailure(FailureKind.EMPTY, "the summarizer returned an empty summary")
            self.thrash.record_success()
            body = assembly.strip_summary_prefix(body)
        except SummaryFailure as failure:
            self.last_failure = failure
            self.thrash.record_failure(failure.kind)
            if self.abort_on_summary_failure or failure.kind.aborts:
                self._last_compress_aborted = True
                self._previous_summary = rollback
                return messages  # upstream hands back its pruned copy, which the host's wrapper discards
            body = fallback_summary(turns, start, self._previous_summary)
            self._last_fallback_used = True
        body = finalize_summary(body, turns, self._previous_summary)
        if self.tail_mode == "lean":
            body = lean.augment(body, turns, self._session_id)
        self._previous_summary = body
        summary = assembly.with_summary_prefix(body)

        out = self._assemble(work, start, end, tail_start, found_at, summary)
        out = assembly.sanitize_tool_pairs(out, keep_inflight=self.rules.inflight_restatement)
        if self.rules.inflight_restatement:
            out = inflight.reappend(out, inflight.find(messages))
        self.compression_count += 1
        out = assembly.strip_old_images(out)
        out = assembly.strip_persisted_flags(out)

        before = self._rough.messages(messages)
        after = self._rough.messages(out)
        if after > before and self.rules.refuse_growth_in_pass:
            # Upstream's compaction wrapper refuses a result that would grow the transcript and
            # records one ineffective strike (``record_rejected_compaction``); nothing is committed.
            self.compression_count -= 1
            self._previous_summary = rollback
            self.thrash.strike()
            return messages
        self.thrash.clear_structural()  # a completed boundary proves compressibility
        self._prune_rearm_tokens = 0  # a compaction restarts the proactive-prune runway
        self.last_savings_percent = 100.0 * (before - after) / before if before else 0.0
        # The effectiveness verdict, the fallback streak (``record_completed_compaction``) and
        # ``awaiting_real_usage_after_compression`` are the host's to arm once it commits the result
        # (upstream's compress_context): a result the host refuses leaves them as they were.
        self._last_summary_fallback_used = self._last_fallback_used
        self._last_compression_made_progress = True
        self.micro.after_compaction()  # its marker holds more than the rolling summary
        return out

    def record_completed_compaction(self, *, used_fallback: bool = False) -> None:
        """The host committed this engine's pass (upstream's ``record_completed_compaction``, which
        ``compress_context`` calls after a pass that made progress): judge it at the next usage
        report, and count a fallback summary towards the fallback streak."""
        self._verify_compaction_cleared_threshold = True
        self.thrash.fallback_streak = self.thrash.fallback_streak + 1 if used_fallback else 0

    def micro_compact_after_turn(self, messages: list[Message]) -> list[Message]:
        """Upstream ``_micro_compact``: the host calls it after each completed turn; a no-op (the same
        list) unless ``micro_compact`` is on (:mod:`.micro`, ``docs/compressor.md``)."""
        return self.micro.run(messages, self) if self.micro_compact else messages

    def _no_op(self, messages: list[Message], work: list[Message]) -> list[Message]:
        """Nothing eligible to compress: the newest rules back off (no strike) and hand back the input;
        0.19.0 strikes and hands back ``work`` (the pruned list once pruning ran)."""
        if self.rules.structural_backoff:
            self.thrash.structural_no_op()
            return messages
        self.thrash.strike()
        return work

    def _rehydrate(self, work: list[Message], start: int, end: int) -> tuple[list[Message], set[int], int, int] | None:
        """Fold earlier handoffs into the previous summary; returns the summarizer's turns, the handoff
        indices, where the tail starts and the history index of the first turn, or None when nothing
        new is left to summarise.

        Newest rules: every handoff from the first non-system row to the cut (to the end of the history
        on the first compaction without a previous summary) is read; merged ones give back their
        genuine content; a handoff past the cut moves the tail start. 0.19.0: only the newest handoff
        before the cut, and the window resumes after it."""
        search_start = 1 if work and work[0].get("role") == "system" else 0
        search_end = end
        if self.rules.rehydrate_all_handoffs and self.compression_count < 1 and not self._previous_summary:
            search_end = len(work)
        found = [i for i in range(search_start, min(search_end, len(work))) if assembly.is_handoff(work[i])]
        if not found:
            if self._previous_summary is not None:
                self._previous_summary = None  # cross-session leakage: no handoff carries it any more
            if not work[start:end] and self.rules.rehydrate_all_handoffs:
                return None  # nothing to summarise (upstream #59496); 0.19.0 summarised it anyway
            return work[start:end], set(), end, start
        newest = found[-1]
        if not self.rules.rehydrate_all_handoffs:
            # 0.19.0 reads the row's whole text after the prefix (a merged row's own text included).
            body = assembly.strip_summary_prefix(content_text(work[newest]), cut_at_marker=False)
            if body and not self._previous_summary:
                self._previous_summary = body
            return work[max(start, newest + 1) : end], set(), end, max(start, newest + 1)
        if not self._previous_summary:
            bodies = [assembly.unwrap_handoff(work[i]).summary for i in found]
            self._previous_summary = "\n\n".join(b for b in bodies if b) or self._previous_summary
        pre = [assembly.strip_handoff_row(work[i]) if i in found else work[i] for i in range(start, newest)]
        pre.append(assembly.strip_handoff_row(work[newest]))
        turns = [r for r in pre if r is not None] + work[newest + 1 : end]
        if not turns:
            return None
        return turns, set(found), (newest + 1 if newest >= end else end), start

    def _assemble(
        self, work: list[Message], start: int, end: int, tail_start: int, found_at: set[int], summary: str
    ) -> list[Message]:
        """Head, summary (standalone or merged into the first tail row) and tail, in upstream's phase 4."""
        if self.rules.placement_after_strip:
            head = [r for r in (assembly.strip_handoff_row(m) for m in work[:start]) if r is not None]
            tail = [
                r
                for i in range(max(end, tail_start), len(work))
                if not (i in found_at and i >= tail_start)
                for r in [assembly.strip_handoff_row(work[i])]
                if r is not None
            ]
            if self.rules.compaction_tail_key:
                tail = [{**m, assembly.TAIL_KEY: True} for m in tail]
            last_head: str | None = str(head[-1].get("role", "user")) if head else "user"
            first_tail = str(tail[0].get("role", "user")) if tail else None
            first_index = 0
            forced = start == 0 or last_head == "system"
            if self.rules.visible_role_placement:
                last_head, first_tail, first_index = assembly.visible_neighbours(head, tail)
            survivors: list[Message] = [*head, *tail]
            has_user: bool | None = _has_real_user_turn(work)
        else:
            head = [dict(m) for m in work[:start]]
            tail = [dict(m) for m in work[end:]]
            last_head = str(work[start - 1].get("role", "user")) if start > 0 else "user"
            first_tail = str(work[end].get("role", "user")) if end < len(work) else "user"
            first_index = 0
            forced = last_head == "system"
            survivors = [*work[:start], *work[end:]]
            has_user = None
        head = assembly.annotate_system(head)
        if not forced and not any(m.get("role") == "user" for m in survivors):
            forced = True  # no user row would survive (upstream #58753)
        placement = assembly.choose_placement(
            last_head, first_tail, forced_user=forced, has_tail=bool(tail), first_tail_index=first_index
        )
        if not self.rules.placement_after_strip:
            placement = dataclasses.replace(placement, forced_user=False)  # 0.19.0 merges as a suffix only
        if placement.merge:
            at = placement.merge_index
            tail[at] = assembly.merge_into(tail[at], summary, placement, has_user)
            return [*head, *tail]
        return [*head, assembly.summary_message(summary, placement.role, has_user), *tail]

    # ------------------------------------------------------------------ cheap pruning

    def prune_tool_results_only(
        self, messages: list[Message], current_tokens: int | None = None
    ) -> tuple[list[Message], int]:
        """Upstream ``prune_tool_results_only``: passes 1–3 gated by ``proactive_prune_tokens``, never when
        the history is no longer than ``protect_last_n + head + 1``, the tail protected by count, and
        committed only when the estimated reclaim reaches ``proactive_prune_min_reclaim_tokens``.

        Newer upstream (``HermesRules.prune_runway``): after a commit, no other until the history
        (message estimate) regrows past its post-prune size plus a runway of
        ``max(reclaimed, proactive_prune_tokens, min reclaim)``; a compaction resets it, and billed
        ``current_tokens`` at or over the compaction threshold bypasses it."""
        if self.proactive_prune_tokens <= 0:
            return messages, 0
        if current_tokens is not None and int(current_tokens) < self.proactive_prune_tokens:
            return messages, 0
        if len(messages) <= self.protect_last_n + self.head_size(messages) + 1:
            return messages, 0
        before = 0
        if self.rules.prune_runway:
            before = sum(budgets.message_budget_tokens(m) for m in messages)
            over = current_tokens is not None and 0 < self.threshold_tokens <= current_tokens
            if before < self._prune_rearm_tokens and not over:
                return messages, 0
        result = pruning.prune_tool_outputs(
            messages,
            protect_tail_count=self.protect_last_n,
            protect_tail_tokens=None,
            min_result_chars=self.proactive_prune_min_result_chars,
            rules=self.rules,
        )
        if result.pruned <= 0:
            return messages, 0
        # The passes measured the reclaim over the same rows (no second full count).
        if (
            self.proactive_prune_min_reclaim_tokens > 0
            and result.saved_tokens < self.proactive_prune_min_reclaim_tokens
        ):
            return messages, 0
        if self.rules.prune_runway:
            reclaimed = result.saved_tokens
            runway = max(reclaimed, self.proactive_prune_tokens, self.proactive_prune_min_reclaim_tokens)
            self._prune_rearm_tokens = before - reclaimed + runway
        return result.messages, result.pruned


# --------------------------------------------------------------------------- helpers


def auto_focus(messages: list[Message]) -> str | None:
    """Upstream ``_derive_auto_focus_topic``: the newest 3 real user turns (each whitespace-collapsed and
    cut to 260 chars with "…"), oldest first under ``"Recent user focus:"``, the whole cut to 700."""
    picked: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "user" or assembly.is_synthetic_user(message):
            continue
        text = redact(content_text(message).strip())
        if not text:
            continue
        text = " ".join(text.split())
        if len(text) > AUTO_FOCUS_TURN_CHARS:
            text = text[: AUTO_FOCUS_TURN_CHARS - 1].rstrip() + "…"
        picked.append(text)
        if len(picked) >= AUTO_FOCUS_TURNS:
            break
    if not picked:
        return None
    focus = AUTO_FOCUS_LEAD + "\n" + "\n".join(f"- {line}" for line in reversed(picked))
    if len(focus) > AUTO_FOCUS_TOTAL_CHARS:
        focus = focus[: AUTO_FOCUS_TOTAL_CHARS - 1].rstrip() + "…"
    return focus


def _has_real_user_turn(messages: list[Message]) -> bool:
    """Upstream ``_transcript_has_real_user_turn``: some user row is not compaction scaffolding
    (blank rows count: only the synthetic ones are excluded)."""
    return any(m.get("role") == "user" and not assembly.is_synthetic_user(m) for m in messages)


def fallback_summary(turns: list[Message], first_index: int, previous: str | None) -> str:
    """The deterministic fallback: last user ask, ≤ 12 actions, blocked errors, files, last 8 turns."""
    items = extract(turns, first_index)
    if previous:
        carried = previous_items(previous, FALLBACK_TEMPLATE, "anchored")
        for source in ("goal",):
            if carried.get(source):
                items[source] = carried[source][:1]
    return render(items, FALLBACK_TEMPLATE, FALLBACK_MAX_CHARS // 4)[:FALLBACK_MAX_CHARS]


def finalize_summary(body: str, turns: list[Message], previous: str | None) -> str:
    """Post-processing: redact, and overwrite the task snapshot with the deterministic line of the
    newest real user turn; without one the summarizer's section stands (upstream
    ``_ground_historical_task_snapshot``)."""
    body = redact(body).strip()
    snapshot = task_snapshot(turns)
    if snapshot == NO_USER_TURNS:
        return body
    lines = body.splitlines()
    heading = f"## {SNAPSHOT_HEADING}"
    if heading in lines:
        at = lines.index(heading)
        end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines[at + 1 : end] = [*snapshot.splitlines(), ""]
        return "\n".join(lines).strip()
    return f"{heading}\n{snapshot}\n\n{body}"


def _flag(name: str, value: object) -> bool:
    """A yes/no parameter as given: ``--param micro_compact=maybe`` must not read as on."""
    if not isinstance(value, bool):
        raise EngineError(f"{name} must be true or false, got {value!r}")
    return value
