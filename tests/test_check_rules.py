"""Every conformance rule has an engine that passes it and one that fails it (no false alarms).

The failing engines live in ``tests/test_testing.py``; these are their correct counterparts, each
doing real work on the hook its rule watches (the report must show that hook acted).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextlab.conformance_data import coding_session
from contextlab.engine import ContextEngine
from contextlab.testing import RULES, ConformanceReport, check_engine
from tests.test_testing import Base


def _head_and_last_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first message plus everything from the last user message on (the same row objects)."""
    cut = next((i for i in range(len(messages) - 1, 0, -1) if messages[i].get("role") == "user"), 0)
    return messages[:1] + messages[cut:] if cut > 1 else messages


class KeepsTail(Base):
    """valid_output, never_grows, noop_is_input, uids_kept: drops the middle, keeps rows as they are."""

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        return _head_and_last_turn(messages)


class MutatesThenCommits(Base):
    """inputs_not_mutated: editing the private snapshot is allowed when the pass commits (legacy contract)."""

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        kept = _head_and_last_turn(messages)
        if kept is messages:
            return messages
        kept[0]["content"] = str(kept[0]["content"])[:-1]  # in place, on a row it then commits
        return kept


class RepeatsANote(Base):
    """uids_kept: a new note whose text repeats an older message is a new message, not a lost uid."""

    notes = 0

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        kept = _head_and_last_turn(messages)
        dropped = [m for m in messages if all(m is not k for k in kept)]
        older = next((m for m in dropped if m.get("role") == "assistant" and not m.get("tool_calls")), None)
        if kept is messages or older is None or kept[0].get("role") != "user":
            return messages
        # A note repeating an older reply's exact text, with no uid: engine-authored, so the host mints one.
        self.notes += 1
        return [kept[0], {"role": "assistant", "content": older["content"]}, *kept[1:]]


class GoodMerge(Base):
    """merge_uids: folds the second message into the first, keeping the first uid and naming the other."""

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        kept = _head_and_last_turn(messages)
        if kept is messages or len(kept) < 3 or kept[1].get("role") != "user":
            return messages
        first, second = kept[0], kept[1]
        if first.get("role") == "system" or not second.get("message_uid"):
            return kept
        merged = dict(first)
        merged["content"] = f"{first['content']}\n\n{second['content']}"
        merged["_absorbed_message_uids"] = [second["message_uid"]]
        return [merged, *kept[2:]]


class StableSelect(Base):
    """select_stable: the same input always gives an equal selection."""

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):  # type: ignore[no-untyped-def]
        kept = _head_and_last_turn(request_messages)
        return None if kept is request_messages else list(kept)


class GoodTools(Base):
    """tool_json: JSON for its own tool and for an unknown one."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "recall", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "recall":
            return json.dumps({"results": [], "query": args.get("q", "")})
        return json.dumps({"error": f"Unknown tool: {name}"})


class GoodPrune(Base):
    """noop_is_input (prune): a new list with n > 0, or the input with 0."""

    def prune_tool_results_only(self, messages, current_tokens=None):  # type: ignore[no-untyped-def]
        out, n = [], 0
        for m in messages[:-4]:
            if m.get("role") == "tool" and m.get("content") != "[cleared]":
                m = {**m, "content": "[cleared]"}
                n += 1
            out.append(m)
        return (out + messages[-4:], n) if n else (messages, 0)


def _report(engine: type[ContextEngine], replay_checks: bool = False) -> ConformanceReport:
    return check_engine(engine, transcripts=[coding_session(turns=3, loops=4)], replay_checks=replay_checks)


@pytest.mark.parametrize(
    ("engine", "rules", "hook"),
    [
        (KeepsTail, {"valid_output", "never_grows", "noop_is_input", "uids_kept"}, "compress"),
        (MutatesThenCommits, {"inputs_not_mutated"}, "compress"),
        (RepeatsANote, {"uids_kept", "merge_uids"}, "compress"),
        (GoodMerge, {"merge_uids", "uids_kept"}, "compress"),
        (StableSelect, {"select_stable", "inputs_not_mutated", "valid_output"}, "select_context"),
        (GoodTools, {"tool_json"}, "tools"),
        (GoodPrune, {"noop_is_input", "never_grows"}, "prune"),
    ],
)
def test_a_correct_engine_passes_the_rule_it_exercises(engine: type[ContextEngine], rules: set[str], hook: str) -> None:
    report = _report(engine)
    assert report.ok, report.format()
    assert rules <= set(report.checked)
    assert report.exercised.get(hook, 0) > 0, f"{hook} never acted, so {sorted(rules)} were not really tested"


def test_the_static_and_replay_rules_pass_on_a_correct_engine() -> None:
    report = _report(KeepsTail, replay_checks=True)
    assert report.ok, report.format()
    assert {"abc", "name_matches_metadata", "concurrent_clones", "deterministic_replay"} <= set(report.checked)


def test_every_rule_is_covered_by_a_passing_engine_here() -> None:
    covered = {"valid_output", "never_grows", "noop_is_input", "uids_kept", "inputs_not_mutated", "merge_uids"}
    covered |= {"select_stable", "tool_json", "abc", "name_matches_metadata", "concurrent_clones"}
    covered |= {"deterministic_replay"}
    # The host-loop rules have their passing and failing engines in tests/test_conformance_host_rules.py.
    covered |= {"turn_copy_read_only", "compacts_under_threshold"}
    assert set(RULES) - covered == set()


class StripsInPlace(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        kept = _head_and_last_turn(messages)
        if kept is messages:
            return messages
        kept[-1]["message_uid"] = "minted-by-the-engine"  # a kept row renamed: its identity is lost
        return kept


class FailingClone(Base):
    def clone_for_agent(self) -> ContextEngine:
        raise AttributeError("'FailingClone' object has no attribute 'db_path'")


def test_a_note_repeating_an_older_message_is_no_false_alarm() -> None:
    report = _report(RepeatsANote)
    assert report.ok, report.format()
    assert report.exercised.get("compress", 0) > 0


def test_uids_kept_fails_on_a_kept_row_that_changes_its_uid() -> None:
    report = _report(StripsInPlace)
    assert report.failed_rules() == ["uids_kept"], report.format()
    assert "changed to 'minted-by-the-engine'" in str(report.failures[0])


def test_a_failing_clone_for_agent_is_one_line_in_the_report() -> None:
    report = _report(FailingClone)
    assert report.failed_rules() == ["abc"]
    line = str(report.failures[0])
    assert "clone_for_agent raised AttributeError" in line and "\n" not in line
