"""The measurement probe on toy engines: every column and frame against a hand-checked answer."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from contextlab import hermes_texts, load_dataset, replay
from contextlab.cache.observer import CacheObserver
from contextlab.engine import Message
from contextlab.examples import tool_conversation
from contextlab.host.observers import RequestView
from contextlab.measure import MeasureProbe, engine_diagnostics, targets_for
from contextlab.measure.recovery import _contains, _ids
from contextlab.measure.text import message_payload
from contextlab.transcripts import GoldFact, Transcript
from tests.toy_engines import KeepLastEngine, SelectingEngine


def planted() -> Transcript:
    t = tool_conversation(8)
    t.messages[0]["content"] += " The deploy key is KEY-7781. Never touch the prod database."
    t.messages[2]["content"] += "\nERROR: cache shard 42 offline"
    t.facts = [
        GoldFact("key", "KEY-7781", 0, "recall", needed_later=True),
        GoldFact("shard", "cache shard 42 offline", 2, "artifact", needed_later=True),
    ]
    t.metadata["fact_uses"] = {"key": [29], "shard": [30]}
    return t


class SummarizingEngine(KeepLastEngine):
    """Keeps the last messages behind a summary that invents an id and upgrades a failure."""

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        kept = super().compress(messages, *args, **kwargs)
        if kept is messages:
            return messages
        text = "[summary] cache shard 42 offline. Commit cafebabe123 merged. file_0.py passed. All tests passed."
        return [{"role": "user", "content": text}, *kept[1:]]


class StoreEngine(KeepLastEngine):
    """Truncates, but keeps every message it saw searchable through two tools."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store: list[str] = []

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        for message in messages:
            payload = message_payload(message)
            if payload not in self.store:
                self.store.append(payload)  # lossless: nothing once seen is forgotten
        return super().compress(messages, *args, **kwargs)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        query = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
        ident = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
        return [{"name": "search", "parameters": query}, {"name": "expand", "parameters": ident}]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "search":
            words = args["query"].split()
            hits = [f"m{i}" for i, text in enumerate(self.store) if all(w in text for w in words)]
            return json.dumps({"matches": [{"id": h, "snippet": "..."} for h in hits]})
        return json.dumps({"text": self.store[int(args["id"][1:])]})


def test_passthrough_keeps_everything_and_never_breaks() -> None:
    result = replay(planted(), "passthrough")
    trace = result.trace
    assert (trace["fact_retention"].dropna() == 1.0).all()
    for column in ("identifier_retention", "error_retention", "artifact_retention", "instruction_retention"):
        assert (trace[column].dropna() == 1.0).all(), column
    assert trace["active_task_in_context"].all()
    assert trace["break_segment"].isna().all() and trace["break_cause"].isna().all()
    assert result.summary["refetch_missing"] == 0 and result.summary["refetch_needs"] == 2
    assert len(result.frames["compaction_diff"]) == 0


def test_a_truncating_engine_loses_and_refetches() -> None:
    result = replay(planted(), KeepLastEngine(threshold_tokens=900, keep=3))
    s = result.summary
    assert s["compactions"] > 0 and s["fact_retention_final"] == 0.0
    assert s["refetch_missing"] == 2
    assert s["refetch_calls"] == 1  # the shard fact came from one tool result; the key from the user
    assert s["instruction_retention_final"] == 0.0
    assert s["active_task_retention"] == 1.0  # the newest ask is always in the kept tail
    causes = result.trace["break_cause"].dropna()
    assert set(causes) == {"compaction"} and len(causes) == s["prefix_breaks"]
    diff = result.frames["compaction_diff"]
    assert len(diff) == s["compactions"] and (diff["messages_summarised"] > 0).all()
    items = result.frames["compaction_items"]
    first = items[items["request"] == items["request"].min()]
    # Ranked by what was needed later: the two planted facts come before unneeded items.
    assert first["needed_later"].iloc[0]
    assert {"key", "shard"} <= set(first[first["kind"] == "fact"]["key"])


def test_faithfulness_flags_invented_ids_and_status_upgrades() -> None:
    t = planted()
    t.messages[2]["content"] += "\nFAILED file_0.py"
    result = replay(t, SummarizingEngine(threshold_tokens=900, keep=3))
    s = result.summary
    assert s["summaries_checked"] > 0
    findings = result.frames["faithfulness"]
    assert "cafebabe123" in set(findings[findings["finding"] == "unsupported_identifier"]["text"])
    assert any("file_0.py passed" in text for text in findings[findings["finding"] == "status_upgrade"]["text"])
    assert s["summary_status_undetermined"] >= 1  # "All tests passed." names nothing to check
    # The summary carries the shard fact: summarised, not removed.
    items = result.frames["compaction_items"]
    assert "summarised" in set(items[items["key"] == "shard"]["outcome"])


class RestatingEngine(SummarizingEngine):
    """SummarizingEngine that also writes the first user ask again, word for word, before its
    summary (as the host restores a user turn around a compaction). The copy is a text part, so the
    host's history repair leaves it a row of its own (it merges adjacent user rows with string
    content only) and merges the summary with what follows it as it does the plain summarizer's."""

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        kept = super().compress(messages, *args, **kwargs)
        if kept is messages:
            return messages
        if not hasattr(self, "ask"):  # the session's first ask, restated at every compaction
            self.ask = next(m["content"] for m in messages if m.get("role") == "user")
        return [{"role": "user", "content": [{"type": "text", "text": self.ask}]}, *kept]


def test_a_verbatim_copy_of_a_given_row_is_no_summary() -> None:
    """The restated ask (it names KEY-7781) is written by the commit but claims nothing: the
    faithfulness counts and findings are the plain summarizer's, while the diff still counts the
    row as written."""
    plain = replay(planted(), SummarizingEngine(threshold_tokens=900, keep=3))
    restating = replay(planted(), RestatingEngine(threshold_tokens=900, keep=3))
    keys = ("summaries_checked", "summary_identifiers", "summary_unsupported_identifiers", "summary_status_upgrades")
    assert plain.summary["compactions"] == restating.summary["compactions"] > 0
    assert [restating.summary[k] for k in keys] == [plain.summary[k] for k in keys]
    assert restating.summary["summaries_checked"] > 0
    assert restating.frames["faithfulness"].equals(plain.frames["faithfulness"])
    written = restating.frames["compaction_diff"]["messages_written"]
    assert (written == plain.frames["compaction_diff"]["messages_written"] + 1).all()


def test_the_oracle_recovers_facts_through_the_engines_tools() -> None:
    result = replay(planted(), StoreEngine(threshold_tokens=900, keep=3))
    s = result.summary
    assert s["recovery_tools"] and s["fact_retention_final"] == 0.0
    assert s["fact_retention_recoverable_final"] == 1.0
    assert s["facts_reachable_at_2"] == 1.0 and s["facts_reachable_at_1"] == 0.0
    assert s["recovery_tokens_mean"] > 0
    trace = result.trace
    assert (trace["fact_retention_recoverable"].dropna() >= trace["fact_retention"].dropna()).all()


def test_the_oracle_reads_only_the_first_ids_it_expands() -> None:
    """A search result's ids are walked in order (``id``, then the summary keys, depth first, no
    repeats, never inside ``text``) and only as far as the ids the oracle expands; with one call
    allowed it expands none."""
    result = {
        "matches": [
            {"id": "m1", "covering_summary": "s1", "nested": [{"id": "m2"}, {"node_id": "n3"}]},
            {"id": "m1"},
            {"summary_id": "s4", "text": {"id": "hidden"}},
        ]
    }
    every: list[str] = []
    _ids(result, every, 100)
    assert every == ["m1", "s1", "m2", "n3", "s4"]
    for limit in range(1, 6):
        first: list[str] = []
        _ids(result, first, limit)
        assert first == every[:limit], limit
    one_call = replay(planted(), StoreEngine(threshold_tokens=900, keep=3), probes=False, observers=[MeasureProbe(k=1)])
    assert one_call.summary["fact_retention_recoverable_final"] == one_call.summary["fact_retention_final"] == 0.0


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_a_tool_output_holds_a_fact_as_its_raw_or_decoded_text_says(ensure_ascii: bool) -> None:
    """The oracle's check (raw text first, decoded strings only for a fact an encoder may escape)
    answers as reading every decoded string does, for facts with and without escaped characters."""
    rng = random.Random(11)
    pieces = ["KEY-7781", "cache shard 42", "a/b.py", 'say "hi"', "line\nbreak", "naïve", "x<y & z", "back\\slash", "é"]
    for _ in range(400):
        values = [" ".join(rng.sample(pieces, rng.randrange(0, 3))) for _ in range(rng.randrange(1, 4))]
        output = {"matches": [{"snippet": value, "id": f"m{i}"} for i, value in enumerate(values)]}
        raw = json.dumps(output, ensure_ascii=ensure_ascii)
        for fact in [*pieces, "shard 42", "KEY-7781 cache", "ve"]:
            expected = fact in raw or any(fact in value for value in values)
            assert _contains(raw, fact) == expected, (raw, fact)
            assert _contains(raw, fact, json.loads(raw)) == expected, (raw, fact)
    assert _contains(json.dumps({"text": 'say "hi"'}), 'say "hi"')  # only in the decoded string


class CountingEngine(StoreEngine):
    """Counts the searches the oracle makes."""

    searches = 0

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        CountingEngine.searches += name == "search"
        return super().handle_tool_call(name, args, **kwargs)


def test_facts_sharing_a_text_are_looked_up_once_per_request() -> None:
    def searches(transcript: Transcript) -> tuple[int, pd.DataFrame]:
        CountingEngine.searches = 0
        result = replay(transcript, CountingEngine(threshold_tokens=900, keep=3))
        return CountingEngine.searches, result.frames["probes"]

    once, _ = searches(planted())
    doubled = planted()
    doubled.facts.append(GoldFact("key-again", "KEY-7781", 0, "recall", needed_later=True))
    twice, probes = searches(doubled)
    assert once > 0 and twice == once
    recall = probes[(probes["kind"] == "fact") & (probes["dimension"] == "category") & (probes["group"] == "recall")]
    assert (recall["recoverable"] % 2 == 0).all() and recall["recoverable"].max() == 2  # both facts, alike


class EchoingEngine(StoreEngine):
    """Its search tool fails with an error naming the query (a ``KeyError`` does)."""

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "search":
            raise KeyError(args["query"])
        return super().handle_tool_call(name, args, **kwargs)


def test_a_tool_that_raises_recovers_nothing_even_if_its_error_names_the_fact() -> None:
    s = replay(planted(), EchoingEngine(threshold_tokens=900, keep=3)).summary
    assert s["recovery_tools"] and s["fact_retention_final"] == 0.0
    assert s["fact_retention_recoverable_final"] == 0.0


class Recorder:
    """Keeps what a brute-force retention check needs for each request."""

    def __init__(self) -> None:
        self.views: list[tuple[int, str]] = []

    def columns(self) -> list[str]:
        return []

    def observe(self, view: RequestView) -> dict[str, Any]:
        self.views.append((view.transcript_index, "\n".join(message_payload(m) for m in view.messages)))
        return {}

    def summary(self) -> dict[str, Any]:
        return {}

    def clone(self) -> Recorder:
        return self


def repeating_engine() -> SelectingEngine:
    """Returns rows more than once (the same objects), a different number of times per request."""
    calls = [0]
    marker = {"role": "user", "content": "[marker]"}

    def choose(rows: list[Message], *_: Any) -> list[Message] | None:
        calls[0] += 1
        n = calls[0]
        if len(rows) < 4:
            return None
        middle = rows[len(rows) // 2]
        # A row repeated 0-3 extra times, an old row dropped and later brought back, a marker twice.
        kept = rows[:1] + rows[2:] if n % 3 else rows
        return [*kept[:-1], *[middle] * (n % 4), marker, *[marker] * (n % 2), kept[-1]]

    return SelectingEngine(choose)


@pytest.mark.parametrize("mode", ["as-shipped", "numpy-sparse", "numpy-dense"])
def test_incremental_counts_equal_a_full_recount_on_every_request(mode: str, monkeypatch: Any) -> None:
    from contextlab import load_dataset
    from contextlab.measure import probe

    if mode != "as-shipped":  # the numpy paths that large moves (a selection swapping groups) take
        monkeypatch.setattr(probe, "_VECTOR_MIN", 0)
        monkeypatch.setattr(probe, "_DENSE_PER_INCIDENCE", 10**9 if mode == "numpy-dense" else 0)
    t = load_dataset("coding-agent-short")
    engines: list[Any] = ["mask_window", "compressor", "retrieval", "hybrid", "clear_tool_uses", "lcm"]
    for engine in [*engines, repeating_engine()]:
        recorder = Recorder()
        result = replay(t, engine, context_length=16_000, observers=[recorder])
        targets = targets_for(t).targets
        for (ti, payload), (_, row) in zip(recorder.views, result.trace.iterrows(), strict=True):
            for kind, column in (("fact", None), ("error", "error_retention"), ("artifact", "artifact_retention")):
                eligible = [x for x in targets if x.kind == kind and x.message_index < ti]
                present = [x for x in eligible if any(text in payload for text in x.texts)]
                if column is None:
                    assert row["facts_in_context"] == len(present), (engine, ti)
                elif eligible:
                    assert math.isclose(row[column], len(present) / len(eligible)), (engine, kind, ti)
        recorder.views.clear()


def test_breaks_are_priced_under_the_first_cache_profile() -> None:
    result = replay(
        planted(),
        KeepLastEngine(threshold_tokens=900, keep=3),
        observers=[CacheObserver("anthropic:claude-sonnet-5-5")],
    )
    breaks = result.trace[result.trace["break_cause"].notna()]
    assert len(breaks) and (breaks["break_cost_usd"] > 0).all() and (breaks["break_tokens"] > 0).all()
    assert math.isclose(result.summary["break_cost_usd"], float(breaks["break_cost_usd"].sum()))
    unpriced = replay(planted(), KeepLastEngine(threshold_tokens=900, keep=3))
    assert math.isnan(unpriced.summary["break_cost_usd"])


def test_diagnostics_from_frames() -> None:
    trace = pd.DataFrame(
        {
            "request": [0, 1, 2, 3, 4],
            "timestamp": [0.0, 900.0, 1800.0, 2700.0, 3600.0],
            "prompt_tokens": [50, 120, 130, 140, 150],
            "threshold_tokens": [100] * 5,
        }
    )
    compactions = pd.DataFrame(
        {
            "turn": [1, 1, 1, 3],
            "request": [1, 1, 1, 3],
            "trigger": ["preflight", "pre_api", "pre_api", "preflight"],
            "outcome": ["committed", "noop", "committed", "committed"],
            "tokens_before": [200, 150, 150, 200],
            "tokens_after": [100, 150, 145, 150],
            "messages_before": [10, 8, 8, 12],
            "messages_after": [8, 8, 8, 10],
        }
    )
    d = engine_diagnostics(trace, compactions, max_attempts=3)
    assert d["diag.compactions_per_hour"] == 3.0
    assert d["diag.requests_between_compactions_min"] == 0
    assert d["diag.passes_without_progress"] == 2  # the noop, and the commit that freed 3%
    assert d["diag.attempt_cap_hits"] == 1
    assert d["diag.never_under_threshold"] is True
    assert d["diag.freed_share_trend"] < 0
    assert d["diag.freed_tokens_mean"] == 155 / 3 and d["diag.requests_between_compactions_mean"] == 1.0
    # The host's prunes are no passes of the engine; a run with none has no compaction values.
    prunes = compactions.assign(trigger="prune")
    for frame in (prunes, compactions.iloc[:0]):
        d = engine_diagnostics(trace, frame, max_attempts=3)
        assert d["diag.passes_without_progress"] == d["diag.attempt_cap_hits"] == 0, frame
        assert d["diag.never_under_threshold"] is False and d["diag.compactions_per_hour"] == 0.0
        assert math.isnan(d["diag.freed_tokens_mean"]) and math.isnan(d["diag.requests_between_compactions_min"])


def test_probes_are_deterministic_and_leave_the_original_columns_alone() -> None:
    a = replay(planted(), SummarizingEngine(threshold_tokens=900, keep=3))
    b = replay(planted(), SummarizingEngine(threshold_tokens=900, keep=3))
    plain = replay(planted(), SummarizingEngine(threshold_tokens=900, keep=3), probes=False)
    drop = ["engine_ms"]
    pd.testing.assert_frame_equal(a.trace.drop(columns=drop), b.trace.drop(columns=drop))
    for name, frame in a.frames.items():
        pd.testing.assert_frame_equal(frame, b.frames[name])
    shared = list(plain.trace.columns)
    pd.testing.assert_frame_equal(a.trace[shared].drop(columns=drop), plain.trace.drop(columns=drop))
    assert MeasureProbe().columns()[:3] == ["facts_eligible", "facts_in_context", "fact_retention"]


@pytest.mark.parametrize("engine", ["summary", "clear_tool_uses", "compressor"])
def test_every_request_after_a_commit_gets_a_diff_whatever_rows_it_kept(engine: str) -> None:
    """A commit is known by the host's history version: a summary after a kept head, or a prune that
    rewrites tool rows in place, gets its diff like a rewrite of the first row does."""
    result = replay(load_dataset("support-agent"), engine, context_length=64_000)
    passes = result.compactions
    committed = sorted(set(passes.loc[passes["outcome"] == "committed", "request"]))
    assert committed  # the engine did rewrite the history in this run
    assert sorted(result.frames["compaction_diff"]["request"]) == committed


def test_a_compaction_diff_counts_what_the_request_before_it_counted() -> None:
    """Each diff's kept, summarised and removed targets of a kind add up to that kind's targets in
    context at the request before the commit, the count the probes frame gives. A later ask that
    repeats an earlier one's words has its text in context before it is introduced; it is not in the
    diff until it is (it was counted once when every matching target was classified)."""
    transcript = load_dataset("coding-agent-short")
    first_ask = next(m for m in transcript.messages if m["role"] == "user")
    last_user = max(i for i, m in enumerate(transcript.messages) if m["role"] == "user")
    transcript.messages.insert(last_user, {"role": "user", "content": first_ask["content"]})
    positions = TranscriptPositions()
    result = replay(
        transcript, SummarizingEngine(threshold_tokens=6000, keep=3), context_length=16_000, observers=[positions]
    )
    late = [t for t in targets_for(transcript).targets if t.kind == "task" and t.message_index == last_user]
    assert late, "the repeated ask is a task target of its own"
    diffs, probes = result.frames["compaction_diff"], result.frames["probes"]
    assert len(diffs) >= 2
    in_context = probes[probes["dimension"] == "all"].set_index(["request", "kind"])["in_context"]
    for diff in diffs.to_dict("records"):
        for kind in ("identifier", "error", "artifact", "instruction", "task"):
            total = diff[f"{kind}_kept"] + diff[f"{kind}_summarised"] + diff[f"{kind}_removed"]
            assert total == in_context.get((diff["request"] - 1, kind), 0), (diff["request"], kind)
    items = result.frames["compaction_items"]
    early = items[(items["kind"] == "task") & (items["key"] == late[0].key)]
    assert all(positions.at[r] > last_user for r in early["request"])


class TranscriptPositions:
    """An observer that records each request's transcript index."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}

    def columns(self) -> list[str]:
        return []

    def summary(self) -> dict[str, Any]:
        return {}

    def clone(self) -> TranscriptPositions:
        return self

    def observe(self, view: RequestView) -> dict[str, Any]:
        self.at[view.request] = view.transcript_index
        return {}


class ClearingEngine(KeepLastEngine):
    """Keeps the last messages and clears every kept tool result to a placeholder naming its call,
    as ``clear_tool_uses`` does (new rows: the placeholders carry no uid of the rows they replace)."""

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        kept = super().compress(messages, *args, **kwargs)
        if kept is messages:
            return messages
        return [
            {"role": "tool", "tool_call_id": m["tool_call_id"], "content": f"[result cleared: id={m['tool_call_id']}]"}
            if m.get("role") == "tool"
            else m
            for m in kept
        ]


def test_a_placeholder_naming_a_cleared_call_is_not_an_unsupported_identifier() -> None:
    """Tool-call ids are in the summarised rows' structure, not their text: quoting one is faithful."""
    result = replay(planted(), ClearingEngine(threshold_tokens=900, keep=4))
    summary = result.summary
    assert summary["summaries_checked"] > 0
    assert summary["summary_identifiers"] > 0  # the placeholders' call ids were read as identifiers
    assert summary["summary_unsupported_identifiers"] == 0


def test_clear_tool_uses_on_a_real_session_invents_no_identifier(shared_transcripts: Path) -> None:
    path = shared_transcripts / "claude-code/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl"
    # The outputs as recorded: with the host's spills the session never needs a clearing pass.
    summary = replay(path, "clear_tool_uses", context_length=64_000, tool_results="recorded").summary
    assert summary["summaries_checked"] > 0
    assert summary["summary_unsupported_identifiers"] == 0


@pytest.mark.parametrize(
    ("dataset", "engine", "window"), [("coding-agent-short", "compressor", 8_000), ("support-agent", "summary", 64_000)]
)
def test_a_compaction_diff_accounts_for_every_earlier_row_once(dataset: str, engine: str, window: int) -> None:
    """Each row of the history before a commit is kept, rewritten, summarised or removed, once: a
    second row under one uid (the compressor's restated in-flight ask) is a row the commit wrote."""
    diffs = replay(load_dataset(dataset), engine, context_length=window).frames["compaction_diff"]
    assert len(diffs)
    accounted = diffs[["messages_kept", "messages_rewritten", "messages_summarised", "messages_removed"]].sum(axis=1)
    assert accounted.tolist() == diffs["messages_before"].tolist()


class MergingEngine(KeepLastEngine):
    """Keeps the last messages and merges its summary into the first kept row, as the compressor
    does on a role collision: the row keeps its uid and gains the host's summary flag."""

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        kept = super().compress(messages, *args, **kwargs)
        if kept is messages:
            return messages
        first = kept[1]
        summary = f"{hermes_texts.SUMMARY_PREFIX} Commit cafebabe123 merged.\n\n{hermes_texts.END_MARKER}"
        own = f"{hermes_texts.PRIOR_HEADER}\n{first['content']}"
        content = f"{own}\n\n{hermes_texts.PRIOR_DELIMITER}\n\n{summary}"
        merged = {**first, "content": content, "_compressed_summary": True}
        return [merged, *kept[2:]]  # the toy's own standalone summary row (kept[0]) is left out


def test_a_summary_merged_into_a_kept_row_is_diffed_and_checked_as_a_summary() -> None:
    """The merged row keeps its uid (a rewrite), but its summary part is what the commit wrote: the
    rows it replaced are summarised, and the faithfulness check reads it (the invented commit)."""
    result = replay(planted(), MergingEngine(threshold_tokens=900, keep=4))
    diffs = result.frames["compaction_diff"]
    assert len(diffs) and (diffs["messages_written"] == 0).all() and (diffs["messages_rewritten"] >= 1).all()
    assert (diffs["messages_summarised"] > 0).all() and (diffs["messages_removed"] == 0).all()
    assert result.summary["summaries_checked"] == len(diffs)
    findings = result.frames["faithfulness"]
    assert "cafebabe123" in set(findings.loc[findings["finding"] == "unsupported_identifier", "text"])
