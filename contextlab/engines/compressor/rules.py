"""Which generation of the host's compressor rules the port applies (``docs/compressor.md``, "Version changes").

The port follows ``NousResearch/hermes-agent@0000416b`` plus the newer upstream rules the issue lists
(``"newest"``). PyPI ``hermes-agent`` 0.19.0
is an older host; ``hermes_rules="0.19.0"`` switches each rule that changed between the two back to
the 0.19.0 behaviour, so a differential against the real 0.19.0 ``ContextCompressor`` can tell a
version change from a port bug (``benchmarks/hermes_differential.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlab.errors import EngineError


@dataclass(frozen=True)
class HermesRules:
    """One switch per rule that differs between the two host versions (True = the newest behaviour)."""

    prune_floor_cap: int | None
    """Pruning's protected-tail count floor is capped at 8 messages (#61932); None = uncapped."""
    pressure_demotion: bool
    """Pass 4: demote bulky tool results inside the protected tail when it exceeds 1.5× the budget."""
    skip_summarised_results: bool
    """Pass 2 leaves a result that already is a one-line summary alone."""
    drop_platform_echoes: bool
    """Blank user rows right after the latest ask (followed by an assistant) are removed."""
    bridge_pullback: bool
    """A cut landing on the latest ask moves back to the older assistant/tool bridge."""
    rehydrate_all_handoffs: bool
    """Every handoff is folded into the previous summary and stripped from head and tail; an
    empty post-handoff window is a no-op strike. Off: only the newest handoff before the cut is read,
    head and tail are copied verbatim."""
    placement_after_strip: bool
    """The summary role alternates against the assembled (stripped) head and tail, is forced to
    ``user`` at the start of the list, and a forced user merge prepends the summary; the
    ``_compressed_summary_has_user_turn`` key is written. Off: raw neighbours, suffix merge only."""
    head_restart_probe: bool
    """``protect_first_n`` decays when an early handoff shows a resumed compacted session."""
    budget_estimate_ceil: bool
    """The tail-walk estimate rounds string content and tool calls up (``estimate_tokens_rough``);
    0.19.0 floored ``len // 4``."""
    rough_skips_persistence_keys: bool
    """The summary budget's rough estimate leaves persistence-only keys (message uids) out; 0.19.0's
    ``estimate_messages_tokens_rough`` counted every key."""
    real_user_filter: bool
    """The tail keeps the newest *real* user turn: not a summary (by key or content), not blank (an
    image is input), not a continuation marker or todo snapshot. 0.19.0 anchors on any user row whose
    content is not a summary."""
    # The rules below are newer than the stored NousResearch snapshot 0000416b (the issue lists them
    # as newer upstream behaviour; docs/compressor.md names upstream's evidence and the fork carrying them).
    prune_runway: bool
    """After a committed proactive prune, no other until the history regrows by the runway past its
    post-prune size (a compaction, or billed usage at the threshold, lifts it)."""
    structural_backoff: bool
    """A no-op compaction with nothing eligible arms a temporary ``structural_backoff`` block instead
    of an ineffective strike (upstream #93022)."""
    compaction_tail_key: bool
    """Every carried tail row gets ``_compaction_tail``: never sent, but counted by the rough estimator."""
    visible_role_placement: bool
    """The summary's role alternation skips tool rows and assistant rows carrying tool calls."""
    inflight_restatement: bool
    """An unanswered newest ask that fell into the window is restated after the boundary (#100818),
    and the trailing in-flight tool calls survive sanitation (#79278)."""
    skill_rules: bool
    """A pruned large ``skill_view`` body carries the skill-pruning marker; recently loaded skill
    bodies are spared by the pruning passes."""
    newest_turn_thinking: bool
    """The tail walks charge reasoning text on the newest assistant row only, unless the route sends
    old turns' reasoning again (an echo route); reasoning is charged once (``reasoning`` skipped
    under a non-blank ``reasoning_content``) and ``reasoning_details`` by its thinking text alone.
    0.19.0 charged all three keys at their serialized length on every row."""
    boundary_keeps_strikes: bool
    """At a compaction boundary the session store hands the ineffective-strike count back with the
    fallback streak (``on_session_start(boundary_reason="compression")`` restores both). 0.19.0
    restores the streak alone, so the reset of ``on_session_end`` (which the host's
    ``commit_memory_session`` calls at each commit) leaves the strikes at zero."""
    refuse_growth_in_pass: bool
    """A result that would grow the transcript is refused inside the pass: the summary state rolls
    back and one ineffective strike is recorded. 0.19.0 has no growth guard: the pass returns it,
    keeping its new summary and count (the replay host's guard then refuses it)."""


NEWEST = HermesRules(
    prune_floor_cap=8,
    pressure_demotion=True,
    skip_summarised_results=True,
    drop_platform_echoes=True,
    bridge_pullback=True,
    rehydrate_all_handoffs=True,
    placement_after_strip=True,
    head_restart_probe=True,
    budget_estimate_ceil=True,
    rough_skips_persistence_keys=True,
    real_user_filter=True,
    prune_runway=True,
    structural_backoff=True,
    compaction_tail_key=True,
    visible_role_placement=True,
    inflight_restatement=True,
    skill_rules=True,
    newest_turn_thinking=True,
    boundary_keeps_strikes=True,
    refuse_growth_in_pass=True,
)

V0_19_0 = HermesRules(
    prune_floor_cap=None,
    pressure_demotion=False,
    skip_summarised_results=False,
    drop_platform_echoes=False,
    bridge_pullback=False,
    rehydrate_all_handoffs=False,
    placement_after_strip=False,
    head_restart_probe=False,
    budget_estimate_ceil=False,
    rough_skips_persistence_keys=False,
    real_user_filter=False,
    prune_runway=False,
    structural_backoff=False,
    compaction_tail_key=False,
    visible_role_placement=False,
    inflight_restatement=False,
    skill_rules=False,
    newest_turn_thinking=False,
    boundary_keeps_strikes=False,
    refuse_growth_in_pass=False,
)

RULESETS: dict[str, HermesRules] = {"newest": NEWEST, "0.19.0": V0_19_0}


def resolve(name: str) -> HermesRules:
    """The rule set named ``name`` (``"newest"`` or ``"0.19.0"``)."""
    try:
        return RULESETS[name]
    except KeyError:
        raise EngineError(f"hermes_rules must be one of {sorted(RULESETS)}, got {name!r}") from None
