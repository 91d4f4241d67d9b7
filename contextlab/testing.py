"""The conformance kit: does an engine honour the host contract?

Use it three ways: ``check_engine(engine)`` returns a :class:`ConformanceReport`; the command line
``contextlab check ENGINE [--transcript PATH]``; and the pytest plugin (installed with contextlab,
entry point ``pytest11``) which gives engine authors the ``engine_conformance`` fixture::

    def test_my_engine(engine_conformance):
        engine_conformance(MyEngine).assert_ok()

Each engine is driven through every conformance conversation (built-in ones plus any given) by a
small host loop that calls the hooks the way the host does, checking every result. Then the real
replay host replays it serially twice and with clones on several threads at once. Every failure
names its rule, the transcript and the request index where it happened.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from contextlab.conformance_reach import check_reach
from contextlab.engine import ContextEngine, Message, clone_engine, hook, is_engine, overrides
from contextlab.engines import EngineSpec
from contextlab.errors import EngineError
from contextlab.host.compaction import _accepted_kwargs
from contextlab.host.engine_tools import host_schema
from contextlab.host.lifecycle import observation_copy
from contextlab.host.replay import run_replay
from contextlab.host.settings import HostSettings
from contextlab.host.trace import TIMING_COLUMNS
from contextlab.host.turns import plan_turns
from contextlab.messages import (
    UidMinter,
    clone_messages,
    content_text,
    stamp_identity,
    validate_messages,
)
from contextlab.plugins import resolve_engine
from contextlab.tokens import RoughCounter
from contextlab.transcripts.model import Transcript

RULES: dict[str, str] = {
    "abc": "subclasses ContextEngine, implements the required methods, name is a non-empty string",
    "name_matches_metadata": "engine.name equals its registered name (plugin.yaml / entry point)",
    "valid_output": "compress, prune and select_context return valid OpenAI lists (0 structural violations)",
    "never_grows": "compress and prune_tool_results_only never grow the history (rough tokens)",
    "noop_is_input": "an unchanged result is the input object itself; prune's no-op is (input, 0)",
    "uids_kept": "kept messages keep their message_uid",
    "merge_uids": "merges keep the first constituent's uid and list the others in _absorbed_message_uids",
    "inputs_not_mutated": "inputs are not mutated outside a committed pass (select_context never mutates)",
    "select_stable": "the same input gives an equal select_context result",
    "tool_json": "tool schemas have a name the host reads; handle_tool_call returns JSON for known and unknown tools",
    "turn_copy_read_only": "on_turn_complete treats its messages as read-only (the host passes a shallow copy)",
    "compacts_under_threshold": "a compactable single-turn tool loop over the threshold ends under it within 3 passes",
    "concurrent_clones": "clones replayed concurrently on several threads give the serial run's trace",
    "deterministic_replay": "two replays give identical traces",
}
"""Rule id → what it checks."""

UNKNOWN_TOOL = "contextlab_conformance_unknown_tool"
STABILITY_SAMPLES = 60
"""``select_stable`` re-asks on every request of short conversations, ~60 evenly spread on long ones."""
MAX_FAILURES_PER_RULE = 5


@dataclass(frozen=True)
class RuleFailure:
    """One failed check: the rule, where (transcript and request index) and why."""

    rule: str
    detail: str
    transcript: str | None = None
    request: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.transcript is not None:
            where = f" [{self.transcript}" + (f", request {self.request}" if self.request is not None else "") + "]"
        return f"{self.rule}{where}: {self.detail}"


@dataclass
class ConformanceReport:
    """The outcome of :func:`check_engine`: every rule checked, every failure with its location."""

    engine: str
    transcripts: list[str]
    checked: list[str] = field(default_factory=list)
    failures: list[RuleFailure] = field(default_factory=list)
    exercised: dict[str, int] = field(default_factory=dict)
    """How often each hook changed something (``compress``, ``prune``, ``select_context``, ``tools``):
    a rule that passed on a hook that never acted was not really tested."""

    @property
    def ok(self) -> bool:
        return not self.failures

    def failed_rules(self) -> list[str]:
        """Distinct failed rule ids, in :data:`RULES` order."""
        failed = {f.rule for f in self.failures}
        return [r for r in RULES if r in failed]

    def rule_results(self) -> list[dict[str, Any]]:
        """One row per checked rule: ``rule``, ``passed``, ``failures`` (count), first failure."""
        rows = []
        for rule in self.checked:
            mine = [f for f in self.failures if f.rule == rule]
            rows.append(
                {
                    "rule": rule,
                    "passed": not mine,
                    "failures": len(mine),
                    "first": str(mine[0]) if mine else None,
                }
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "ok": self.ok,
            "transcripts": self.transcripts,
            "exercised": dict(self.exercised),
            "rules": self.rule_results(),
            "failures": [
                {"rule": f.rule, "transcript": f.transcript, "request": f.request, "detail": f.detail}
                for f in self.failures
            ],
        }

    def format(self) -> str:
        """A readable multi-line report."""
        lines = [
            f"conformance of {self.engine!r} on {len(self.transcripts)} transcript(s): {'PASS' if self.ok else 'FAIL'}"
        ]
        if self.exercised:
            acted = ", ".join(f"{k}: {v}" for k, v in sorted(self.exercised.items()))
            lines.append(f"  hooks that changed something: {acted}")
        for row in self.rule_results():
            lines.append(f"  {'ok  ' if row['passed'] else 'FAIL'} {row['rule']}: {RULES[row['rule']]}")
            if not row["passed"]:
                for failure in [f for f in self.failures if f.rule == row["rule"]]:
                    lines.append(f"       - {failure}")
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise ``AssertionError`` with the formatted report when any rule failed."""
        if not self.ok:
            raise AssertionError(self.format())


class _Recorder:
    def __init__(self, report: ConformanceReport) -> None:
        self.report = report
        self._counts: dict[str, int] = {}

    def fail(self, rule: str, detail: str, transcript: str | None = None, request: int | None = None) -> None:
        count = self._counts.get(rule, 0)
        self._counts[rule] = count + 1
        if count < MAX_FAILURES_PER_RULE:
            self.report.failures.append(RuleFailure(rule, detail, transcript, request))


# --------------------------------------------------------------------------- entry point


def check_engine(
    engine: EngineSpec,
    params: Mapping[str, Any] | None = None,
    *,
    transcripts: Iterable[Transcript] | None = None,
    extra_transcripts: Iterable[Transcript] = (),
    context_length: int | None = None,
    threads: int = 4,
    replay_checks: bool = True,
    full: bool = False,
    progress: bool | None = False,
) -> ConformanceReport:
    """Check one engine against every rule in :data:`RULES`.

    Args:
        engine: A name, a ``ContextEngine`` subclass or an instance (never modified: clones are used).
        params: Constructor parameters (names and classes).
        transcripts: Conversations to drive (default: :func:`bundled_transcripts`).
        extra_transcripts: Appended to ``transcripts`` (e.g. a real recording).
        context_length: Window given to the engine; default: 60% of each conversation's size, so
            thresholds are crossed half-way.
        threads: Concurrent clones for the ``concurrent_clones`` rule.
        replay_checks: Also run the replay-host rules (determinism, concurrency).
        full: Default transcripts include every project dataset (slow: a 1M-token session).
        progress: One progress bar over the transcripts (:func:`contextlab.progress.progress_bar`;
            None: on unless the environment turns bars off).

    Raises:
        EngineError: The engine cannot be resolved at all (unknown name, import failure).
    """
    prototype = resolve_engine(engine, params)
    label = _name(prototype)
    chosen = list(transcripts) if transcripts is not None else bundled_transcripts(full)
    chosen += list(extra_transcripts)
    report = ConformanceReport(label, [t.transcript_id for t in chosen])
    rec = _Recorder(report)
    report.checked = list(RULES)
    _check_abc(prototype, rec)
    _check_metadata(engine, prototype, rec)

    def fresh() -> ContextEngine:
        # A name or class gives a fresh instance per run, as the host's loader does; an instance is
        # cloned (a failing clone_for_agent is a one-line EngineError naming the engine).
        if isinstance(engine, (str, type)):
            return resolve_engine(engine, params)
        return resolve_engine(prototype)

    from contextlab.progress import progress_bar

    bar = progress_bar(len(chosen), f"check {label}", unit="transcript", enabled=progress)
    for transcript in chosen:
        window = context_length or default_context_length(transcript)
        try:
            _Driver(fresh(), transcript, window, rec).run()
        except Exception as error:  # an engine that raises in a required hook fails the rule it was in
            rec.fail("abc", f"driving the engine raised {type(error).__name__}: {error}", transcript.transcript_id)
        if replay_checks:
            _check_replays(fresh, transcript, window, threads, rec)
        bar.update(1)
    bar.close()
    try:
        reach = check_reach(fresh())
    except Exception as error:
        reach = f"raised {type(error).__name__}: {error}"
    if reach is not None:
        rec.fail("compacts_under_threshold", reach)
    if not replay_checks:
        report.checked = [r for r in RULES if r not in ("concurrent_clones", "deterministic_replay")]
    return report


QUICK_DATASETS = ("coding-agent-short", "support-agent")
"""Project datasets in the default kit run; ``full=True`` adds every dataset (the 1M-token session too)."""


def bundled_transcripts(full: bool = False) -> list[Transcript]:
    """The conversations every shipped engine must pass on.

    The built-in conformance conversations, then the project's generated datasets (``datasets/``):
    the short coding session and the support queue by default, all of them with ``full``.
    """
    from contextlab.conformance_data import conformance_transcripts
    from contextlab.datasets import DATASETS, load_dataset

    names = sorted(DATASETS) if full else [n for n in QUICK_DATASETS if n in DATASETS]
    return conformance_transcripts() + [load_dataset(name) for name in names]


def default_context_length(transcript: Transcript) -> int:
    """60% of the conversation's rough size (at least 2,048), so every gate is exercised."""
    rough = RoughCounter()
    total = rough.request(transcript.messages, transcript.system_prompt, transcript.tools)
    return max(2048, int(total * 0.6))


# --------------------------------------------------------------------------- static rules


_REQUIRED = ("update_from_response", "should_compress", "compress")


def _check_abc(engine: ContextEngine, rec: _Recorder) -> None:
    if not is_engine(engine):
        rec.fail("abc", f"{type(engine).__name__} is not a ContextEngine subclass")
        return
    abstract: frozenset[str] = getattr(type(engine), "__abstractmethods__", frozenset())
    if abstract:
        rec.fail("abc", f"abstract methods not implemented: {sorted(abstract)}")
    for method in _REQUIRED:
        if not callable(getattr(engine, method, None)):
            rec.fail("abc", f"{method} is not callable")
    try:
        name = engine.name
    except Exception as error:
        rec.fail("abc", f"name raised {type(error).__name__}: {error}")
        return
    if not isinstance(name, str) or not name.strip():
        rec.fail("abc", f"name must be a non-empty string, got {name!r}")
    if overrides(engine, "clone_for_agent"):
        try:
            clone_engine(engine)
        except Exception as error:
            rec.fail(
                "abc",
                f"clone_for_agent raised {type(error).__name__}: {error} "
                "(the host falls back to its compressor when it cannot copy an engine)",
            )


def _check_metadata(spec: EngineSpec, engine: ContextEngine, rec: _Recorder) -> None:
    if not isinstance(spec, str):
        return
    from contextlab import plugins

    info = plugins.default_registry().infos().get(spec)
    if info is None:
        return
    actual = _name(engine)
    if actual != info.name:
        rec.fail(
            "name_matches_metadata",
            f"registered as {info.name!r} ({info.source}: {info.location}) but engine.name is {actual!r}",
        )


# --------------------------------------------------------------------------- the driver


class _Driver:
    """A minimal host loop calling each hook as the host does and checking every result."""

    def __init__(self, engine: ContextEngine, transcript: Transcript, context_length: int, rec: _Recorder) -> None:
        self.engine = engine
        self.transcript = transcript
        self.tid = transcript.transcript_id
        self.window = context_length
        self.rec = rec
        self.rough = RoughCounter()
        self.minter = UidMinter(0)
        self.history: list[Message] = []
        self.request = 0
        self.system: list[Message] = (
            [{"role": "system", "content": transcript.system_prompt}] if transcript.system_prompt else []
        )
        self.selects = overrides(engine, "select_context")
        self.prunes = overrides(engine, "prune_tool_results_only")
        self.observes = overrides(engine, "on_turn_complete")
        self._total = 0
        self._counted = 0
        self._stable_stride = max(1, transcript.n_requests // STABILITY_SAMPLES)
        self._fixed = self.rough.request([], transcript.system_prompt, transcript.tools)

    def fail(self, rule: str, detail: str) -> None:
        self.rec.fail(rule, detail, self.tid, self.request)

    def acted(self, hook: str) -> None:
        counts = self.rec.report.exercised
        counts[hook] = counts.get(hook, 0) + 1

    def run(self) -> None:
        engine = self.engine
        engine.update_model(self.transcript.model or "gpt-4o", self.window)
        messages = self.transcript.messages
        n_requests = self.transcript.n_requests
        force_at = {n_requests // 2, max(0, n_requests - 1)}
        for turn in plan_turns(messages):
            start = len(self.history)
            self.history = [*self.history, *clone_messages(messages[i] for i in turn.lead_indices)]
            stamp_identity(self.history, self.minter, start=start)
            usage: dict[str, Any] | None = None
            for step in turn.steps:
                tokens = self._current()
                if self.selects:
                    self._select()
                if engine.should_compress(tokens):
                    self._compress(tokens, force=False)
                if self.request in force_at:
                    self._compress(self._current(), force=True)
                start = len(self.history)
                appended = [messages[step.assistant_index], *(messages[i] for i in step.tool_indices)]
                self.history = [*self.history, *clone_messages(appended)]
                stamp_identity(self.history, self.minter, start=start)
                prompt = self._current()
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": 10,
                    "total_tokens": prompt + 10,
                    "input_tokens": prompt,
                    "output_tokens": 10,
                    "cache_read_tokens": 0,
                    "cache_write_tokens": 0,
                    "reasoning_tokens": 0,
                }
                engine.update_from_response(usage)
                if self.prunes and step.tool_indices and not engine.should_compress(prompt):
                    self._prune(prompt)
                self.request += 1
            if self.observes:
                clone = clone_messages(self.history)
                given = observation_copy(self.history)  # what the host passes (docs/host-loop.md)
                try:
                    engine.on_turn_complete(
                        given,
                        usage=usage,
                        turn_id=f"conformance:{turn.index}",
                        api_call_count=len(turn.steps),
                    )
                except Exception as error:
                    self.fail("abc", f"on_turn_complete raised {type(error).__name__}: {error}")
                if given != clone or self.history != clone:
                    self.fail("turn_copy_read_only", "on_turn_complete mutated the messages it observes")
                    self.history = clone
        self._tools()

    def _current(self) -> int:
        """Rough size of the working history, kept incrementally (the kit must stay linear)."""
        while self._counted < len(self.history):
            self._total += self.rough.message(self.history[self._counted])
            self._counted += 1
        return self._total + self._fixed

    def _tokens(self, history: list[Message]) -> int:
        return self.rough.request(history, self.transcript.system_prompt, self.transcript.tools)

    # -- select_context

    def _select(self) -> None:
        # The second (stability) call doubles the cost; on long conversations sample it.
        calls = 2 if self.request % self._stable_stride == 0 else 1
        incoming = next((m for m in reversed(self.history) if m.get("role") == "user"), None)
        pristine = self.system + self.history  # the kit's own rows: never handed to the engine
        results = []
        for _ in range(calls):
            request = clone_messages(pristine)
            conversation = clone_messages(self.history)
            inc = clone_messages([incoming])[0] if incoming is not None else None
            try:
                result = self.engine.select_context(
                    request,
                    conversation_messages=conversation,
                    incoming_message=inc,
                    budget_tokens=self.window,
                )
            except Exception as error:
                self.fail("valid_output", f"select_context raised {type(error).__name__}: {error}")
                return
            # Plain ``==`` on dicts is a deep, C-speed comparison: linear and cheap per request.
            if request != pristine or conversation != self.history or inc != incoming:
                self.fail("inputs_not_mutated", "select_context mutated its inputs (it is request-only)")
            results.append((result, request))
        first, first_input = results[0]
        pristine_rows = pristine
        if calls == 2 and first != results[1][0]:
            self.fail("select_stable", "two calls with the same input returned different selections")
        if first is None or first is first_input:
            return
        if not isinstance(first, list) or not all(isinstance(m, dict) for m in first):
            self.fail("valid_output", f"select_context returned {type(first).__name__}, not a list of dicts")
            return
        self.acted("select_context")
        self._valid(first, "select_context")
        self._uids(pristine_rows, first, "select_context", first_input)

    # -- compress

    def _compress(self, tokens: int, *, force: bool) -> None:
        snapshot = clone_messages(self.history)
        wanted: dict[str, Any] = {
            "current_tokens": tokens,
            "focus_topic": None,
            "force": force,
            "memory_context": "",
        }
        # The host filters optional kwargs by signature, so 3-argument engines keep working.
        accepted = _accepted_kwargs(self.engine.compress)
        kwargs = wanted if accepted is None else {k: v for k, v in wanted.items() if k in accepted}
        try:
            result = self.engine.compress(snapshot, **kwargs)
        except Exception as error:
            self.fail("valid_output", f"compress raised {type(error).__name__}: {error}")
            return
        if result is snapshot:
            if snapshot != self.history:
                self.fail("inputs_not_mutated", "compress returned its input (no-op) but had mutated it")
            return
        if not isinstance(result, list) or not all(isinstance(m, dict) for m in result):
            self.fail("valid_output", f"compress returned {type(result).__name__}, not a list of dicts")
            return
        original = self.history  # never handed to the engine, so still the pre-pass state
        if result == original:
            self.fail("noop_is_input", "compress returned an equal copy; a no-op must return the input object")
        self._valid(self.system + result, "compress")
        if self._tokens(result) > self._tokens(original):
            self.fail(
                "never_grows",
                f"compress grew the history from {self._tokens(original)} to {self._tokens(result)} rough tokens",
            )
            return
        self._uids(original, result, "compress", snapshot)
        self.acted("compress")
        self._commit(result)

    def _prune(self, tokens: int) -> None:
        snapshot = clone_messages(self.history)
        try:
            value = self.engine.prune_tool_results_only(snapshot, current_tokens=tokens)
        except Exception as error:
            self.fail("valid_output", f"prune_tool_results_only raised {type(error).__name__}: {error}")
            return
        if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int)):
            self.fail(
                "valid_output",
                f"prune_tool_results_only must return (messages, n), got {type(value).__name__}",
            )
            return
        result, n = value
        if result is snapshot:
            if n != 0:
                self.fail("noop_is_input", f"prune returned its input with n_pruned={n}; a no-op is (input, 0)")
            if snapshot != self.history:
                self.fail("inputs_not_mutated", "prune returned its input (no-op) but had mutated it")
            return
        if n <= 0:
            self.fail("noop_is_input", f"prune returned a new list with n_pruned={n}; a no-op is (input, 0)")
            return
        if not isinstance(result, list) or not all(isinstance(m, dict) for m in result):
            self.fail("valid_output", "prune_tool_results_only returned a non-list")
            return
        original = self.history  # never handed to the engine, so still the pre-pass state
        if result == original:
            self.fail("noop_is_input", "prune returned an equal copy with n > 0")
        self._valid(self.system + result, "prune_tool_results_only")
        if self._tokens(result) > self._tokens(original):
            self.fail("never_grows", "prune_tool_results_only grew the history")
            return
        self._uids(original, result, "prune_tool_results_only", snapshot)
        self.acted("prune")
        self._commit(result)

    def _commit(self, result: list[Message]) -> None:
        new = clone_messages(result)
        stamp_identity(new, self.minter)
        self.history = new
        self._total, self._counted = 0, 0
        self.engine.last_prompt_tokens = -1  # the host's "compression just ran" sentinel

    # -- shared checks

    def _valid(self, messages: list[Message], hook: str) -> None:
        violations = validate_messages(messages)
        if violations:
            self.fail("valid_output", f"{hook}: {len(violations)} structural violation(s), first: {violations[0]}")

    def _uids(self, before: list[Message], after: list[Message], hook: str, handed: list[Message]) -> None:
        """``uids_kept`` by identity: a row of the list the engine was handed (``handed[i]`` is the
        engine's copy of ``before[i]``) that comes back must still carry ``before[i]``'s uid. Any
        other row is engine-authored or a rewrite, whatever its text (a note repeating an older
        note is a new message); only merges are checked, by ``merge_uids``."""
        by_uid: dict[str, Message] = {}
        for m in before:
            uid = m.get("message_uid")
            if isinstance(uid, str) and uid:
                by_uid.setdefault(uid, m)
        position = {id(m): i for i, m in enumerate(handed)}
        kept_uids = {m.get("message_uid") for m in after}
        for i, m in enumerate(after):
            absorbed = m.get("_absorbed_message_uids")
            if absorbed:
                self._merge(i, m, absorbed, by_uid, kept_uids, hook)
            source = position.get(id(m))
            if source is None or source >= len(before):
                continue
            expected = before[source].get("message_uid")
            uid = m.get("message_uid")
            if isinstance(expected, str) and expected and uid != expected and not absorbed:
                self.fail(
                    "uids_kept",
                    f"{hook}: message {i} is input row {source} kept in place but its message_uid "
                    f"{'was dropped' if not uid else f'changed to {uid!r}'} (was {expected!r})",
                )

    def _merge(self, i: int, m: Message, absorbed: Any, by_uid: dict[str, Message], kept: set[Any], hook: str) -> None:
        if not isinstance(absorbed, list) or not all(isinstance(u, str) for u in absorbed):
            self.fail("merge_uids", f"{hook}: message {i}: _absorbed_message_uids must be a list of uids")
            return
        text = content_text(m)
        uid = m.get("message_uid")
        position = 0
        if isinstance(uid, str) and uid in by_uid:
            first_text = content_text(by_uid[uid]).strip()
            if first_text and not text.startswith(first_text[: min(len(first_text), 200)]):
                self.fail(
                    "merge_uids",
                    f"{hook}: message {i} keeps uid {uid!r} but that message's text does not come first in the merge",
                )
            position = len(first_text)
        for other in absorbed:
            source = by_uid.get(other)
            if source is None:
                continue  # absorbed earlier (a fold of a fold) or engine-authored: nothing to locate
            if other in kept and other != uid:
                self.fail(
                    "merge_uids",
                    f"{hook}: message {i} absorbs {other!r} but that message is still a separate row",
                )
            piece = content_text(source).strip()
            found = text.find(piece, position) if piece else position
            if found < 0:
                self.fail(
                    "merge_uids",
                    f"{hook}: message {i} absorbs {other!r} but its text is not in the merge (in text order)",
                )
                return
            position = found + len(piece)

    # -- tools

    def _tools(self) -> None:
        try:
            schemas = hook(self.engine, "get_tool_schemas")() or []
        except Exception as error:
            self.fail("tool_json", f"get_tool_schemas raised {type(error).__name__}: {error}")
            return
        for position, schema in enumerate(schemas):
            if host_schema(schema) is None:
                self.fail("tool_json", f"get_tool_schemas()[{position}] has no name the host reads; the host skips it")
        schemas = [s for s in schemas if isinstance(s, dict)]
        names = [_tool_name(s) for s in schemas]
        for name, schema in zip(names, schemas, strict=False):
            args = _sample_args(schema, self.history)
            self._tool_call(name, args)
        self._tool_call(UNKNOWN_TOOL, {})

    def _tool_call(self, name: str, args: dict[str, Any]) -> None:
        try:
            out = hook(self.engine, "handle_tool_call")(name, args, messages=clone_messages(self.history))
        except Exception as error:
            self.fail("tool_json", f"handle_tool_call({name!r}) raised {type(error).__name__}: {error}")
            return
        if not isinstance(out, str):
            self.fail("tool_json", f"handle_tool_call({name!r}) returned {type(out).__name__}, not a str")
            return
        try:
            json.loads(out)
        except ValueError:
            self.fail("tool_json", f"handle_tool_call({name!r}) returned non-JSON: {out[:80]!r}")
            return
        self.acted("tools")


def _tool_name(schema: dict[str, Any]) -> str:
    fn = schema.get("function")
    return str(fn.get("name", "")) if isinstance(fn, dict) else str(schema.get("name", ""))


def _sample_args(schema: dict[str, Any], history: list[Message]) -> dict[str, Any]:
    """Arguments for a tool from its JSON schema: required fields filled with plausible values."""
    fn = schema.get("function") if isinstance(schema.get("function"), dict) else schema
    params = fn.get("parameters", {}) if isinstance(fn, dict) else {}
    props = params.get("properties", {}) if isinstance(params, dict) else {}
    word = next((w for m in history for w in content_text(m).split() if len(w) > 4 and w.isalpha()), "error")
    args: dict[str, Any] = {}
    for key in params.get("required", []) if isinstance(params, dict) else []:
        kind = props.get(key, {}).get("type") if isinstance(props.get(key), dict) else "string"
        enum = props.get(key, {}).get("enum") if isinstance(props.get(key), dict) else None
        if enum:
            args[key] = enum[0]
        elif kind in ("integer", "number"):
            args[key] = 1
        elif kind == "boolean":
            args[key] = False
        elif kind == "array":
            args[key] = []
        else:
            args[key] = word
    return args


# --------------------------------------------------------------------------- replay rules


def _trace_key(frame: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in frame.columns if c not in TIMING_COLUMNS]
    return frame[keep].reset_index(drop=True)


def _first_difference(a: pd.DataFrame, b: pd.DataFrame) -> tuple[int | None, str]:
    if len(a) != len(b):
        return min(len(a), len(b)), f"{len(a)} vs {len(b)} requests"
    for i in range(len(a)):
        left, right = a.iloc[i].to_dict(), b.iloc[i].to_dict()
        diff = [str(k) for k in left if str(left[k]) != str(right.get(k))]
        if diff:
            return int(left.get("request", i)), f"columns differ: {', '.join(diff[:4])}"
    return None, ""


def _check_replays(
    fresh: Callable[[], ContextEngine], transcript: Transcript, window: int, threads: int, rec: _Recorder
) -> None:
    settings = HostSettings(context_length=window)
    tid = transcript.transcript_id

    def one() -> tuple[pd.DataFrame, pd.DataFrame, str, str | None]:
        result = run_replay(transcript, fresh(), settings, engine_label="conformance", params_label="")
        return _trace_key(result.trace), _trace_key(result.compactions), result.status, result.error

    first = one()
    second = one()
    if first[2] != "ok":
        rec.fail("abc", f"the replay failed: {first[3]}", tid)
    for frame_a, frame_b, what in (
        (first[0], second[0], "trace"),
        (first[1], second[1], "compaction events"),
    ):
        at, why = _first_difference(frame_a, frame_b)
        if why:
            rec.fail("deterministic_replay", f"second replay's {what} differs: {why}", tid, at)
    results: list[Any] = [None] * threads
    barrier = threading.Barrier(threads)

    def worker(slot: int) -> None:
        barrier.wait()
        try:
            results[slot] = one()
        except Exception as error:
            results[slot] = error

    pool = [threading.Thread(target=worker, args=(i,), name=f"conformance-{i}") for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    for slot, outcome in enumerate(results):
        if isinstance(outcome, Exception):
            rec.fail("concurrent_clones", f"thread {slot} raised {type(outcome).__name__}: {outcome}", tid)
            continue
        at, why = _first_difference(first[0], outcome[0])
        if why:
            rec.fail("concurrent_clones", f"thread {slot}'s trace differs from the serial run: {why}", tid, at)
            break


def _name(engine: ContextEngine) -> str:
    try:
        return str(engine.name)
    except Exception:
        return type(engine).__name__


def check_engines(names: Sequence[str], **kwargs: Any) -> dict[str, ConformanceReport]:
    """:func:`check_engine` for several names; an engine that cannot load gets a failed ``abc`` rule."""
    reports: dict[str, ConformanceReport] = {}
    for name in names:
        try:
            reports[name] = check_engine(name, **kwargs)
        except EngineError as error:
            report = ConformanceReport(name, [], checked=["abc"])
            report.failures.append(RuleFailure("abc", str(error)))
            reports[name] = report
    return reports
