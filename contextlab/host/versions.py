"""Which Hermes host the replay loop follows (``HostSettings.hermes_version``, ``docs/host-loop.md``
§Host versions).

The loop follows newer upstream ``NousResearch/hermes-agent`` (``"newest"``). PyPI ``hermes-agent``
0.19.0, the host a user can install, measures context pressure and gates compaction differently;
``"0.19.0"`` switches each of those rules back, so a replay decides what that release decides
(``tests/hermes/test_real_loop.py`` replays whole sessions through both). The compressor port has its
own rule generations (:mod:`contextlab.engines.compressor.rules`); :func:`contextlab.replay` gives it
the host's version unless its parameters name one.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlab.errors import ConfigError


@dataclass(frozen=True)
class HostRules:
    """One switch per host rule that differs between the two versions (True = newer upstream)."""

    anchored_pressure: bool
    """Pressure is the last reported usage plus the rough estimate of the rows since (the usage
    anchor), else the rough estimate floored at the last real prompt. 0.19.0 measures every gate
    with a rough estimate alone: the turn-start one of system prompt, rows and tools, the pre-API
    one of the request as built, the post-tool one the engine's ``last_prompt_tokens``."""
    per_message_rounding: bool
    """The rough estimate of a message list rounds each message up (and counts CJK text per
    character). 0.19.0 rounds once over the list's characters (``(Σ len(str(row)) + 3) // 4``) and
    counts every key a row holds, the session store's ``_db_persisted`` stamp included."""
    preflight_maintenance: bool
    """Below the threshold the turn-start gate asks ``should_compress_preflight`` (an engine's own
    maintenance pass). 0.19.0 never calls it."""
    preflight_seeds_last_prompt: bool
    """0.19.0's turn-start gate writes its estimate into ``engine.last_prompt_tokens`` when larger
    (never over the ``-1`` sentinel): the post-tool gate reads it until a response reports usage.
    Newer upstream keeps that figure for display only. True = the 0.19.0 behaviour."""
    post_tool_budget: bool
    """The post-tool gate spends the per-turn attempts, waits for real usage after a compaction and
    prunes tool results (``prune_tool_results_only``) when it does not compact. 0.19.0's post-tool
    gate compacts whenever ``should_compress`` says so and prunes nothing."""
    max_attempts_setting: bool
    """``compression.max_attempts`` sets the passes a turn may run (floor 1, cap 10). 0.19.0 has no such
    setting: it always allows :data:`ATTEMPTS_0_19_0`."""
    attempt_rearm: bool
    """A compaction confirmed by real usage under the threshold re-arms the per-turn attempts
    (docs/host-loop.md §Per-turn attempts). 0.19.0 has no re-arm."""
    growth_guard: bool
    """A compaction whose rough size grew is refused (outcome ``grew``). 0.19.0 commits it."""
    message_uids: bool
    """Rows carry the host's ``message_uid`` and tool-call uids (the compressor's 0.19.0 estimates,
    which count every key, would count them). 0.19.0 has none."""
    spill_to_host_cache: bool
    """An oversized tool output is written to the host's spill cache and replaced by a
    ``<persisted-output>`` block. 0.19.0 writes it into the terminal sandbox, and with none (a
    replay has no terminal running) truncates it inline with a note."""
    stall_guards: bool
    """The tool-loop stall guards exist (notices and stubs for repeated identical calls); 0.19.0
    has the tool-loop warnings only."""
    preflight_needs_token_cut: bool
    """Another turn-start pass runs only when the last one cut the estimate by over 5%
    (``_compression_warrants_another_preflight_pass``); 0.19.0 also counts fewer rows as progress."""


NEWEST = HostRules(
    anchored_pressure=True,
    per_message_rounding=True,
    preflight_maintenance=True,
    preflight_seeds_last_prompt=False,
    post_tool_budget=True,
    max_attempts_setting=True,
    attempt_rearm=True,
    growth_guard=True,
    message_uids=True,
    spill_to_host_cache=True,
    stall_guards=True,
    preflight_needs_token_cut=True,
)

V0_19_0 = HostRules(
    anchored_pressure=False,
    per_message_rounding=False,
    preflight_maintenance=False,
    preflight_seeds_last_prompt=True,
    post_tool_budget=False,
    max_attempts_setting=False,
    attempt_rearm=False,
    growth_guard=False,
    message_uids=False,
    spill_to_host_cache=False,
    stall_guards=False,
    preflight_needs_token_cut=False,
)

ATTEMPTS_0_19_0 = 3
"""The passes a turn may run on 0.19.0 (``compression_attempts < 3`` before a call, ``range(3)`` at turn
start, ``max_compression_attempts = 3`` on overflow: ``agent/conversation_loop.py``, ``agent/turn_context.py``)."""

HERMES_VERSIONS: dict[str, HostRules] = {"newest": NEWEST, "0.19.0": V0_19_0}
"""The host versions a replay can follow, by name."""


def host_rules(version: str) -> HostRules:
    """The host rules of ``version`` (``"newest"`` or ``"0.19.0"``)."""
    try:
        return HERMES_VERSIONS[version]
    except KeyError:
        raise ConfigError(f"hermes_version must be one of {', '.join(HERMES_VERSIONS)}, got {version!r}") from None
