"""The frame schema: every column contextlab writes, declared once (``docs/frames.md``).

Each :class:`Column` names its frame, dtype, unit, the observer that adds it and what it means. The
host's trace and compaction columns, the prompt-cache and measurement columns, the run summary and the
``probes`` frame are all declared here; everything else (the trace builders, the Parquet writer, the
report, the CLI tables, the widgets, the README's tables) reads names, types and units from this
module. Column families whose names carry a key (a second cache profile's ``openai.cost_usd``, a
category's ``fact_retention_final.<category>``) are declared as patterns with ``<placeholder>`` parts.

Light on purpose: no pandas here, so the engine SDK and ``contextlab --help`` stay fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any, Literal, get_args

Frame = Literal["trace", "compactions", "summary", "probes", "compaction_diff", "compaction_items", "faithfulness"]
"""The tables a replay returns: ``ReplayResult.trace`` / ``.compactions`` / ``.summary``, and the measurement
probe's ``ReplayResult.frames`` (``probes``, ``compaction_diff``, ``compaction_items``, ``faithfulness``)."""

TargetKind = Literal["fact", "identifier", "error", "artifact", "instruction", "task"]
"""What a measurement target is (``contextlab.measure.targets.KINDS``, in column order)."""

ItemOutcome = Literal["kept", "summarised", "removed"]
"""What a committed compaction did to a target: kept its text, summarised it, or dropped it."""

DType = Literal["str", "int", "float", "bool"]
"""Logical column type (the Parquet writer maps it to an Arrow type)."""

Unit = Literal["", "tokens", "messages", "count", "share", "slope", "usd", "s", "ms", "index", "flag"]
"""What a value measures; ``share`` is a fraction in [0, 1], ``slope`` a change per step (either sign),
``index`` a 0-based position."""

Source = Literal["host", "cache", "probe", "measure", "diagnostics", "bench"]
"""Who adds the column: the host replay, the prompt-cache observer, the retention probe (the
``facts_*`` columns), the wider measurement probe, its post-run engine diagnostics, or the sweep."""

Phase = Literal["turn_start", "tool_loop"]
"""Trace ``phase``: the first request of a user turn, or one inside its tool loop."""

Trigger = Literal["manual", "preflight", "maintenance", "pre_api", "post_tool", "overflow", "prune", "micro"]
"""Compactions ``trigger``: which host gate ran the pass (``maintenance`` is the turn-start pass an
engine asks for through ``should_compress_preflight`` below the threshold, ``prune`` is
``prune_tool_results_only``, ``micro`` the built-in compressor's opt-in micro-compaction after a turn)."""

Outcome = Literal["committed", "noop", "timeout", "error", "invalid", "grew"]
"""Compactions ``outcome``: whether the pass's result replaced the history, and if not why."""

Status = Literal["ok", "failed", "crashed", "timeout"]
"""Summary ``status`` of one run: ``failed`` (the engine or its setup failed), and in a sweep also
``crashed`` (its worker died) or ``timeout`` (stopped after the run timeout)."""

SessionEvent = Literal["new", "reset"]
"""Trace ``session_event``: the first request after a ``/new`` or ``/reset``."""


@dataclass(frozen=True)
class Column:
    """One declared column.

    Attributes:
        frame: The table it belongs to.
        name: Column name; ``<placeholder>`` parts match any text (a column family).
        dtype: Logical type of its values (missing values are allowed in any column).
        unit: What the value measures.
        source: Who adds it.
        description: One line on what it means.
        timing: Wall-clock time: the only values that may differ between two identical replays.
    """

    frame: Frame
    name: str
    dtype: DType
    unit: Unit
    source: Source
    description: str
    timing: bool = False

    @property
    def is_pattern(self) -> bool:
        """True for a column family (a name with ``<placeholder>`` parts)."""
        return "<" in self.name


def _cols(frame: Frame, source: Source, rows: Iterable[tuple[str, DType, Unit, str]]) -> tuple[Column, ...]:
    return tuple(
        Column(frame, name, dtype, unit, source, text, timing=unit in ("ms", "s")) for name, dtype, unit, text in rows
    )


_LABELS: tuple[tuple[str, DType, Unit, str], ...] = (
    ("transcript", "str", "", "transcript id"),
    ("engine", "str", "", "engine label (the same for a failed and a successful run)"),
    ("params", "str", "", "engine parameters and host-setting overrides of the run, as one label"),
)

HOST_TRACE = _cols(
    "trace",
    "host",
    (
        *_LABELS,
        ("turn", "int", "index", "user turn of the request"),
        ("request", "int", "index", "request index in the run"),
        ("phase", "str", "", "`turn_start` or `tool_loop`"),
        ("timestamp", "float", "", "virtual clock time of the request (seconds)"),
        ("n_messages", "int", "messages", "messages sent, system prompt included"),
        (
            "prompt_tokens",
            "int",
            "tokens",
            "exact prompt tokens (tiktoken, chat framing, tools and overhead included)",
        ),
        ("prompt_tokens_rough", "int", "tokens", "the host's rough estimate of the request"),
        ("pressure_tokens", "int", "tokens", "the figure the host's compaction gates compared with the threshold"),
        ("usage_model", "str", "", "how the usage given to the engine was made (`exact`, `rough`, `recorded`)"),
        ("usage_prompt_tokens", "int", "tokens", "prompt tokens reported to the engine in its usage"),
        ("completion_tokens", "int", "tokens", "recorded completion tokens, else the exact size of the recorded reply"),
        ("threshold_tokens", "int", "tokens", "the engine's effective compaction threshold"),
        ("context_length", "int", "tokens", "the model window"),
        ("over_threshold", "bool", "flag", "pressure >= threshold"),
        ("compressed", "bool", "flag", "a compaction committed before this request"),
        ("compress_trigger", "str", "", "the gate(s) whose compaction committed, `+`-joined"),
        ("compression_count", "int", "count", "the engine's own compaction counter"),
        ("pruned", "bool", "flag", "a `prune_tool_results_only` pass committed before this request"),
        ("select_context_used", "bool", "flag", "the engine replaced the request in `select_context`"),
        ("select_context_rejected", "str", "", "why the host refused the engine's `select_context` list"),
        ("prefix_tokens", "int", "tokens", "exact tokens shared from the start with the previous request"),
        ("prefix_messages", "int", "messages", "messages shared from the start with the previous request"),
        ("violations", "int", "count", "structural violations in the engine-shaped request, before the sanitizers"),
        ("violation_rules", "str", "", "the violated rules, `;`-joined"),
        ("overflow", "bool", "flag", "the request exceeded the window even after overflow recovery"),
        ("engine_ms", "float", "ms", "time spent inside the engine for this request"),
        ("sent", "bool", "flag", "false when the host never sent the request (a compaction timeout ended its turn)"),
        ("exit_reason", "str", "", "why an unsent request's turn ended"),
        ("retries", "int", "count", "recorded provider retries before this request"),
        ("usage_reported", "bool", "flag", "false when the recorded response had no usage"),
        (
            "invalid_results",
            "int",
            "count",
            "malformed engine results at this request (refused lists, invalid passes)",
        ),
        ("engine_tool_results", "int", "count", "engine-tool results answered live by `handle_tool_call`"),
        ("session_event", "str", "", "`new` / `reset` on the first request after a `/new` or `/reset`"),
        (
            "history_repairs",
            "int",
            "count",
            "the host's repairs of its own history before this request (arguments, merged or dropped rows)",
        ),
        (
            "tool_outputs_spilled",
            "int",
            "count",
            "outputs of this request's tool calls the host spilled to a preview (too large alone or for the batch)",
        ),
        (
            "tool_loop_notes",
            "int",
            "count",
            "outputs of this request's tool calls the host's tool-loop guardrails changed (a warning, notice or stub)",
        ),
    ),
)
"""The host's trace columns, in frame order (``contextlab.host.replay``)."""

_CACHE: tuple[tuple[str, DType, Unit, str], ...] = (
    ("cache_read_tokens", "int", "tokens", "prompt tokens the provider would read from its cache"),
    ("cache_write_tokens", "int", "tokens", "prompt tokens the provider would write to its cache"),
    ("uncached_tokens", "int", "tokens", "prompt tokens billed at the plain input price"),
    ("cost_usd", "float", "usd", "the request's price (input, cache reads and writes, output)"),
)
CACHE_TRACE = _cols("trace", "cache", _CACHE) + _cols(
    "trace", "cache", ((f"<profile>.{n}", d, u, f"{t}, under a further cache profile") for n, d, u, t in _CACHE)
)
"""Prompt-cache columns (``contextlab.cache.observer``): the first profile's plain, the others prefixed."""

PROBE_TRACE = _cols(
    "trace",
    "probe",
    (
        ("facts_eligible", "int", "count", "gold facts seen by the host so far"),
        ("facts_in_context", "int", "count", "eligible facts whose text is in the request as sent"),
        ("fact_retention", "float", "share", "facts in context / eligible facts"),
    ),
)
"""The retention probe's columns (``contextlab.probes``)."""

MEASURE_TRACE = _cols(
    "trace",
    "measure",
    (
        ("facts_recoverable", "int", "count", "missing facts the oracle reaches through the engine's own tools"),
        ("fact_retention_recoverable", "float", "share", "(facts in context + recoverable) / eligible facts"),
        ("refetch_missing", "int", "count", "facts missing at the request that needs them"),
        ("refetch_calls", "int", "count", "distinct recorded tool calls to redo for them"),
        ("identifier_retention", "float", "share", "share of identifiers still in the request"),
        ("error_retention", "float", "share", "share of error fingerprints still in the request"),
        ("artifact_retention", "float", "share", "share of files read / edited / created still in the request"),
        ("instruction_retention", "float", "share", "share of user instructions and corrections still in the request"),
        ("active_task_in_context", "bool", "flag", "the newest user ask is in the request"),
        ("break_segment", "str", "", "where the prefix broke (system, tools, a message role)"),
        ("break_position", "int", "index", "first message position that differs from the previous request"),
        ("break_tokens", "int", "tokens", "prompt tokens the break invalidated"),
    ),
)
"""The measurement probe's extra columns, per request (``contextlab.measure``)."""

MEASURE_POST_TRACE = _cols(
    "trace",
    "measure",
    (
        ("break_cause", "str", "", "why the prefix broke (compaction, prune, `select_context`, system prompt, ...)"),
        ("break_cost_usd", "float", "usd", "the invalidated tokens priced under the first cache profile"),
    ),
)
"""Columns the measurement probe adds after the run (break attribution)."""

COMPACTIONS = _cols(
    "compactions",
    "host",
    (
        *_LABELS,
        ("turn", "int", "index", "user turn of the pass"),
        ("request", "int", "index", "the request the pass ran before"),
        (
            "trigger",
            "str",
            "",
            "the gate: " + ", ".join(f"`{value}`" for value in get_args(Trigger)),
        ),
        ("focus_topic", "str", "", "the focus topic of a manual compaction"),
        ("outcome", "str", "", "`committed`, `noop`, `timeout`, `error`, `invalid` or `grew`"),
        ("reason", "str", "", "why an uncommitted pass was not taken"),
        ("tokens_before", "int", "tokens", "rough tokens of the history before the pass"),
        ("tokens_after", "int", "tokens", "rough tokens of the history after the pass"),
        ("messages_before", "int", "messages", "history messages before the pass"),
        ("messages_after", "int", "messages", "history messages after the pass"),
        ("summary_tokens", "int", "tokens", "exact tokens of the messages the pass wrote"),
        ("duration_ms", "float", "ms", "wall time of the pass"),
    ),
)
"""One row per compaction or prune pass, committed or not (``contextlab.host.replay``)."""

_SETUP = _cols(
    "summary",
    "host",
    (
        *_LABELS,
        ("model", "str", "", "model name given to the engine"),
        ("context_length", "int", "tokens", "the model window"),
        ("threshold_tokens", "int", "tokens", "the engine's effective threshold at the end of the run"),
        ("threshold_percent", "float", "share", "the `threshold_percent` setting (empty: the engine's own)"),
        ("threshold_note", "str", "", "why the effective threshold is not percent x window"),
        ("window_note", "str", "", "set when the real host would refuse the window (under 64,000 tokens)"),
        ("status", "str", "", "`ok`, `failed`, or in a sweep `crashed` / `timeout`"),
        ("error", "str", "", "why a failed run failed"),
    ),
)
_COUNTS = _cols(
    "summary",
    "host",
    (
        ("requests", "int", "count", "trace rows (requests, sent or not)"),
        ("turns", "int", "count", "user turns"),
        ("compactions", "int", "count", "committed compactions (prunes excluded)"),
        ("compaction_attempts", "int", "count", "compaction passes, committed or not (prunes excluded)"),
        ("prunes", "int", "count", "committed prune passes"),
        ("prompt_tokens_total", "int", "tokens", "sum of `prompt_tokens`"),
        ("prompt_tokens_max", "int", "tokens", "peak `prompt_tokens`"),
        ("prompt_tokens_mean", "float", "tokens", "mean `prompt_tokens`"),
        ("prompt_tokens_rough_total", "int", "tokens", "sum of `prompt_tokens_rough`"),
        ("completion_tokens_total", "int", "tokens", "sum of `completion_tokens`"),
        ("prefix_tokens_total", "int", "tokens", "sum of `prefix_tokens`"),
        ("prefix_share", "float", "share", "prefix tokens / prompt tokens"),
        ("prefix_breaks", "int", "count", "sent requests that did not extend the previous sent request"),
        ("violations", "int", "count", "sum of `violations`"),
        ("overflows", "int", "count", "requests over the window"),
        ("select_context_used", "int", "count", "requests the engine replaced in `select_context`"),
        ("engine_ms_total", "float", "ms", "time spent inside the engine"),
        ("invalid_results", "int", "count", "malformed engine results"),
        ("compression_timeouts", "int", "count", "compaction passes discarded for taking too long"),
        ("requests_not_sent", "int", "count", "requests the host never sent"),
        ("retries", "int", "count", "recorded provider retries"),
        ("responses_without_usage", "int", "count", "sent requests whose response had no usage"),
        ("engine_tool_results", "int", "count", "engine-tool results answered live"),
        ("session_boundaries", "int", "count", "`/new` and `/reset` boundaries"),
        ("history_repairs", "int", "count", "sum of `history_repairs`"),
        ("tool_outputs_spilled", "int", "count", "sum of `tool_outputs_spilled`"),
        ("tool_loop_notes", "int", "count", "sum of `tool_loop_notes`"),
    ),
)
_CACHE_SUMMARY_ROWS: tuple[tuple[str, DType, Unit, str], ...] = (
    ("cache_hit_rate", "float", "share", "cache reads / prompt tokens the provider saw"),
    ("cache_write_share", "float", "share", "cache writes / prompt tokens the provider saw"),
    ("cache_read_tokens_total", "int", "tokens", "sum of `cache_read_tokens`"),
    ("cache_write_tokens_total", "int", "tokens", "sum of `cache_write_tokens`"),
    ("uncached_tokens_total", "int", "tokens", "sum of `uncached_tokens`"),
    ("cost_usd", "float", "usd", "the run's price"),
    ("cost_ratio", "float", "share", "price / the price without any cache"),
    ("cache_profile", "str", "", "the cache profile (`provider:model`)"),
)
_CACHE_SUMMARY = (
    _cols("summary", "cache", _CACHE_SUMMARY_ROWS)
    + _cols(
        "summary",
        "cache",
        ((f"<profile>.{n}", d, u, f"{t}, under a further cache profile") for n, d, u, t in _CACHE_SUMMARY_ROWS),
    )
    + _cols("summary", "cache", (("cache_policy", "str", "", "the breakpoint placement policy"),))
)
_FACT_SUMMARY = _cols(
    "summary",
    "probe",
    (
        ("facts", "int", "count", "gold facts of the transcript"),
        ("fact_retention_mean", "float", "share", "mean `fact_retention` over requests with eligible facts"),
        ("fact_retention_final", "float", "share", "`fact_retention` at the end of the run"),
        ("needed_facts_retained_final", "float", "share", "facts needed later that are still in the last request"),
        ("fact_retention_final.<category>", "float", "share", "`fact_retention_final` of one fact category"),
    ),
)
_MEASURE_SUMMARY = _cols(
    "summary",
    "measure",
    (
        ("fact_retention_final.origin_<origin>", "float", "share", "`fact_retention_final` of facts of one origin"),
        ("fact_retention_recoverable_final", "float", "share", "`fact_retention_recoverable` at the end of the run"),
        ("facts_reachable_at_<n>", "float", "share", "missing facts the oracle reaches within n tool calls"),
        ("recovery_tokens_mean", "float", "tokens", "tokens the oracle's recall calls return"),
        ("recovery_tools", "bool", "flag", "the engine offers recall tools"),
        ("refetch_needs", "int", "count", "requests that needed a fact"),
        ("refetch_missing", "int", "count", "of those, facts missing"),
        ("refetch_calls", "int", "count", "distinct recorded tool calls to redo"),
        ("refetch_tokens", "int", "tokens", "tokens those calls returned"),
        ("facts_source", "str", "", "`gold` (planted) or `mined` facts"),
        (
            "targets_spilled_by_host",
            "int",
            "count",
            "targets only in the part of a tool output the host spilled (never eligible)",
        ),
        ("identifier_retention_mean", "float", "share", "mean `identifier_retention`"),
        ("identifier_retention_final", "float", "share", "`identifier_retention` at the end"),
        ("error_retention_mean", "float", "share", "mean `error_retention`"),
        ("error_retention_final", "float", "share", "`error_retention` at the end"),
        ("artifact_retention_mean", "float", "share", "mean `artifact_retention`"),
        ("artifact_retention_final", "float", "share", "`artifact_retention` at the end"),
        ("instruction_retention_mean", "float", "share", "mean `instruction_retention`"),
        ("instruction_retention_final", "float", "share", "`instruction_retention` at the end"),
        ("instruction_retention_final.<category>", "float", "share", "`instruction_retention_final` of one category"),
        ("active_task_retention", "float", "share", "requests with the newest ask in context / requests checked"),
        ("active_task_lost_after_compaction", "int", "count", "requests right after a compaction without the ask"),
        ("summaries_checked", "int", "count", "engine-written rows checked for faithfulness (not verbatim copies)"),
        ("summary_identifiers", "int", "count", "identifiers in those rows"),
        ("summary_unsupported_identifiers", "int", "count", "of those, absent from what was summarised"),
        ("summary_status_upgrades", "int", "count", '"failing" reported as "done"'),
        ("summary_status_undetermined", "int", "count", "status sentences the check could not judge"),
        ("prefix_break_causes", "str", "", "`cause=count` per break cause, `;`-joined"),
        ("break_cost_usd", "float", "usd", "price of the tokens the prefix breaks invalidated"),
    ),
)
_DIAG_SUMMARY = _cols(
    "summary",
    "diagnostics",
    (
        ("diag.virtual_hours", "float", "", "virtual hours the run spans"),
        ("diag.compactions_per_hour", "float", "", "committed compactions per virtual hour"),
        ("diag.requests_between_compactions_mean", "float", "count", "mean requests between compactions"),
        ("diag.requests_between_compactions_min", "int", "count", "fewest requests between compactions"),
        ("diag.freed_share_mean", "float", "share", "mean share of tokens a compaction freed"),
        ("diag.freed_tokens_mean", "float", "tokens", "mean rough tokens a compaction freed"),
        (
            "diag.freed_share_trend",
            "float",
            "slope",
            "least-squares slope of the freed share per compaction (below 0: each frees less)",
        ),
        ("diag.passes_without_progress", "int", "count", "passes that did not shrink the history"),
        ("diag.attempt_cap_hits", "int", "count", "turns that used every compaction attempt"),
        ("diag.never_under_threshold", "bool", "flag", "once over the threshold, never under it again"),
    ),
)
_RUN_SUMMARY = _cols("summary", "host", (("wall_s", "float", "s", "wall time of the replay"),))

SUMMARY = _SETUP + _COUNTS + _CACHE_SUMMARY + _FACT_SUMMARY + _MEASURE_SUMMARY + _DIAG_SUMMARY + _RUN_SUMMARY
"""The run summary (``ReplayResult.summary``; one row per run in a sweep's summary frame)."""

PROBES = _cols(
    "probes",
    "measure",
    (
        *_LABELS,
        ("request", "int", "index", "request index in the run"),
        ("kind", "str", "", "target kind (`fact`, `identifier`, `error`, `artifact`, `instruction`, `task`)"),
        ("dimension", "str", "", "how the group is cut (`all`, `category`, `origin`)"),
        ("group", "str", "", "the group's value"),
        ("eligible", "int", "count", "targets of the group seen so far"),
        ("in_context", "int", "count", "of those, in the request as sent"),
        ("recoverable", "int", "count", "of the missing ones, reachable through the engine's tools"),
    ),
)
"""The ``probes`` frame: per request and target group."""

COMPACTION_DIFF = _cols(
    "compaction_diff",
    "measure",
    (
        *_LABELS,
        ("request", "int", "index", "the request the committed compaction ran before"),
        ("messages_before", "int", "messages", "history messages before the compaction"),
        ("messages_after", "int", "messages", "history messages after it"),
        ("messages_kept", "int", "messages", "messages kept unchanged"),
        ("messages_rewritten", "int", "messages", "messages kept with changed content"),
        ("messages_summarised", "int", "messages", "messages replaced by engine-written rows"),
        ("messages_removed", "int", "messages", "messages dropped with nothing written in their place"),
        ("messages_written", "int", "messages", "engine-written rows"),
        *(
            (f"{kind}_{outcome}", "int", "count", f"{kind} targets {outcome}")
            for kind in get_args(TargetKind)
            for outcome in get_args(ItemOutcome)
        ),
    ),
)
"""The ``compaction_diff`` frame: one row per committed compaction, message and target tallies."""

COMPACTION_ITEMS = _cols(
    "compaction_items",
    "measure",
    (
        *_LABELS,
        ("request", "int", "index", "the request the committed compaction ran before"),
        ("kind", "str", "", "target kind"),
        ("key", "str", "", "the target's identity (fact key, path, identifier, ...)"),
        ("text", "str", "", "the target's text (first 160 characters)"),
        ("category", "str", "", "the target's category"),
        ("origin", "str", "", "where the target came from (planted or mined, and which message role)"),
        ("outcome", "str", "", "`summarised` or `removed`"),
        ("needed_later", "bool", "flag", "a later request used the target"),
        ("later_uses", "int", "count", "later requests that used it"),
        ("next_use", "int", "index", "transcript index of the next use"),
    ),
)
"""The ``compaction_items`` frame: each target a committed compaction summarised or removed."""

FAITHFULNESS = _cols(
    "faithfulness",
    "measure",
    (
        *_LABELS,
        ("request", "int", "index", "the request the engine-written row was checked at"),
        ("finding", "str", "", "`unsupported_identifier` or `status_upgrade`"),
        ("text", "str", "", "the identifier or sentence found"),
    ),
)
"""The ``faithfulness`` frame: what the summary checks found in engine-written rows."""

TRACE = HOST_TRACE + CACHE_TRACE + PROBE_TRACE + MEASURE_TRACE + MEASURE_POST_TRACE
"""Every trace column."""

ALL: tuple[Column, ...] = TRACE + COMPACTIONS + SUMMARY + PROBES + COMPACTION_DIFF + COMPACTION_ITEMS + FAITHFULNESS

FRAMES: dict[Frame, tuple[Column, ...]] = {
    "trace": TRACE,
    "compactions": COMPACTIONS,
    "summary": SUMMARY,
    "probes": PROBES,
    "compaction_diff": COMPACTION_DIFF,
    "compaction_items": COMPACTION_ITEMS,
    "faithfulness": FAITHFULNESS,
}


def names(columns: Iterable[Column], source: Source | None = None) -> list[str]:
    """Names of ``columns`` (of one ``source`` when given), in declaration order; patterns left out."""
    return [c.name for c in columns if not c.is_pattern and (source is None or c.source == source)]


@cache
def _index(frame: Frame) -> tuple[dict[str, Column], list[tuple[re.Pattern[str], Column]]]:
    exact: dict[str, Column] = {}
    patterns: list[tuple[re.Pattern[str], Column]] = []
    for column in FRAMES[frame]:
        if column.is_pattern:
            parts = re.split(r"<[^>]+>", column.name)
            patterns.append((re.compile(".+".join(re.escape(p) for p in parts) + r"\Z"), column))
        else:
            exact.setdefault(column.name, column)
    return exact, patterns


def find(frame: Frame, name: str) -> Column | None:
    """The declaration of ``name`` in ``frame`` (exact names first, then patterns), or None."""
    exact, patterns = _index(frame)
    if name in exact:
        return exact[name]
    return next((column for pattern, column in patterns if pattern.match(name)), None)


def column(frame: Frame, name: str) -> Column:
    """The declaration of ``name`` in ``frame``; a KeyError naming the frame when undeclared."""
    found = find(frame, name)
    if found is None:
        raise KeyError(f"{frame} column {name!r} is not declared in contextlab.schema")
    return found


def declared(frame: Frame, *wanted: str) -> tuple[str, ...]:
    """``wanted`` unchanged, after checking each is a declared ``frame`` column: consumers list the
    columns they show through this, so a renamed column fails at import, not in a notebook."""
    for name in wanted:
        column(frame, name)
    return wanted


def undeclared(frame: Frame, found: Iterable[str]) -> list[str]:
    """The names in ``found`` that ``frame`` does not declare."""
    return [name for name in found if find(frame, name) is None]


TIMING: frozenset[str] = frozenset(c.name for c in ALL if c.timing)
"""Columns that measure wall time; everything else is deterministic for a given input and seed."""


def unit_of(name: str, frame: Frame = "summary") -> Unit:
    """The declared unit of ``name`` (``""`` when undeclared)."""
    found = find(frame, name)
    return found.unit if found is not None else ""


def format_value(name: str, value: object, frame: Frame = "summary") -> str:
    """``value`` for reading, by the column's unit: shares as percentages, money in dollars, counts
    with thousands separators; missing values as an empty string."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    unit = unit_of(name, frame)
    if unit == "share" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.1%}"
    if unit == "usd" and isinstance(value, int | float):
        return f"${value:,.4f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if hasattr(value, "item"):  # a numpy scalar from a frame
        return format_value(name, value.item(), frame)
    return str(value)


def markdown_table(columns: Iterable[Column]) -> str:
    """A Markdown table of ``columns`` (name, type, unit, added by, meaning), as in the README."""
    lines = ["| column | type | unit | added by | meaning |", "|---|---|---|---|---|"]
    for c in columns:
        lines.append(f"| `{c.name}` | {c.dtype} | {c.unit or ''} | {c.source} | {c.description} |")
    return "\n".join(lines)


def generated_tables() -> dict[Frame, str]:
    """Per frame, the block ``docs/frames.md`` holds verbatim (``python -m contextlab.schema`` prints them)."""
    return {
        frame: f"<!-- columns:{frame} -->\n{markdown_table(columns)}\n<!-- /columns:{frame} -->"
        for frame, columns in FRAMES.items()
    }


def literal_values(kind: object) -> tuple[str, ...]:
    """The values of a ``Literal`` type (``literal_values(Outcome)``)."""
    return tuple(str(v) for v in get_args(kind))


@dataclass
class RunSummary:
    """One run's summary, typed: the host's setup and counts, then what the observers added.

    ``ReplayResult.summary`` holds :meth:`as_dict` (a plain dict, one row of a sweep's summary frame);
    :meth:`from_dict` reads such a dict or frame row back. Field order is the frame's column order.
    """

    transcript: str
    engine: str
    params: str
    model: str = ""
    context_length: int = 0
    threshold_tokens: int = 0
    threshold_percent: float | None = None
    threshold_note: str = ""
    window_note: str = ""
    status: Status = "ok"
    error: str | None = None
    requests: int = 0
    turns: int = 0
    compactions: int = 0
    compaction_attempts: int = 0
    prunes: int = 0
    prompt_tokens_total: int = 0
    prompt_tokens_max: int = 0
    prompt_tokens_mean: float = 0.0
    prompt_tokens_rough_total: int = 0
    completion_tokens_total: int = 0
    prefix_tokens_total: int = 0
    prefix_share: float = 0.0
    prefix_breaks: int = 0
    violations: int = 0
    overflows: int = 0
    select_context_used: int = 0
    engine_ms_total: float = 0.0
    invalid_results: int = 0
    compression_timeouts: int = 0
    requests_not_sent: int = 0
    retries: int = 0
    responses_without_usage: int = 0
    engine_tool_results: int = 0
    session_boundaries: int = 0
    history_repairs: int = 0
    tool_outputs_spilled: int = 0
    tool_loop_notes: int = 0
    observed: dict[str, Any] = field(default_factory=dict)
    """Observer and measurement keys (cache, probes, diagnostics), in the order they were added."""
    wall_s: float | None = None
    """Wall time of the replay (set last; None until the replay has finished)."""

    def as_dict(self) -> dict[str, Any]:
        """The summary as the flat dict ``ReplayResult.summary`` holds (observer keys inline)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "observed":
                out.update(self.observed)
            elif f.name != "wall_s" or self.wall_s is not None:
                out[f.name] = getattr(self, f.name)
        return out

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> RunSummary:
        """A summary dict (or a summary-frame row as a dict) as a :class:`RunSummary`; keys that are
        not fields go to ``observed``."""
        own = {f.name for f in fields(cls)} - {"observed"}
        known = {k: v for k, v in row.items() if k in own}
        return cls(**known, observed={k: v for k, v in row.items() if k not in own})

    def __getitem__(self, name: str) -> Any:
        """A value by column name, field or observed key (``summary["cache_hit_rate"]``)."""
        if name in self.observed:
            return self.observed[name]
        if name in {f.name for f in fields(self)} - {"observed"}:
            return getattr(self, name)
        raise KeyError(name)


SUMMARY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunSummary) if f.name != "observed")
"""The summary keys :class:`RunSummary` types (every run has them)."""


if __name__ == "__main__":
    print("\n\n".join(generated_tables().values()))
