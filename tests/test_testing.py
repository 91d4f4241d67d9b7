"""The conformance kit: shipped engines pass; deliberately broken engines fail the right rules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest

from contextlab import load_transcript, plugins
from contextlab.conformance_data import chat_session, coding_session, conformance_transcripts
from contextlab.engine import ContextEngine
from contextlab.messages import validate_messages
from contextlab.testing import RULES, ConformanceReport, bundled_transcripts, check_engine, check_engines
from tests.plugin_helpers import write_plugin

SHIPPED = [
    "passthrough",
    "compressor",
    "mask_window",
    "clear_tool_uses",
    "summary",
    "hybrid",
    "lcm",
    "retrieval",
]


class Base(ContextEngine):
    """A correct do-nothing engine the broken ones start from."""

    @property
    def name(self) -> str:
        return "broken"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        return messages


class MutatesThenNoop(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        messages[-1]["content"] = "scribbled"
        return messages


class EqualCopy(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        return [dict(m) for m in messages]


class DropsToolResult(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        first_tool = next((i for i, m in enumerate(messages) if m.get("role") == "tool"), None)
        if first_tool is None:
            return messages
        return messages[:first_tool] + messages[first_tool + 1 :]


class Grows(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        return [*messages, {"role": "user", "content": "padding " * 200}]


class StripsUids(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        for m in messages:
            m.pop("message_uid", None)  # the kept rows themselves lose their identity
        return list(messages)  # a new list of the same rows


class BadMerge(Base):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        out = [dict(m) for m in messages]
        other = next(m for m in messages if m.get("role") == "assistant")
        out[0]["_absorbed_message_uids"] = [other["message_uid"]]  # claims a fold that did not happen
        out[0]["content"] = str(out[0]["content"])[:-1]  # and a real change so it is not an equal copy
        return out


class ChurningSelect(Base):
    calls = 0

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,  # type: ignore[no-untyped-def]
        budget_tokens=0,
    ):
        self.calls += 1
        return [*request_messages, {"role": "user", "content": f"selection #{self.calls}"}]


class MutatingSelect(Base):
    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,  # type: ignore[no-untyped-def]
        budget_tokens=0,
    ):
        conversation_messages[-1]["content"] = "changed"
        return None


class InvalidSelect(Base):
    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,  # type: ignore[no-untyped-def]
        budget_tokens=0,
    ):
        return [m for m in request_messages if m.get("role") != "tool"]  # orphans every tool call


class BadTools(Base):
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "name": "recall",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            }
        ]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name == "recall":
            return "found it"  # not JSON
        raise KeyError(name)  # unknown tools must get JSON too


class NamelessTool(Base):
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"description": "a tool without a name", "parameters": {"type": "object", "properties": {}}}]


class BadPrune(Base):
    def prune_tool_results_only(self, messages, current_tokens=None):  # type: ignore[no-untyped-def]
        return messages, 3  # claims work but returns the input


class SharedState(Base):
    sessions: ClassVar[list[str]] = []  # shared by every clone: a per-run engine must not do this

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.sessions.append(session_id)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return len(self.sessions) <= 1 and (prompt_tokens or 0) > 1500  # only the first run ever compresses

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):  # type: ignore[no-untyped-def]
        cut = next((i for i in range(len(messages) - 1, 0, -1) if messages[i].get("role") == "user"), 0)
        return messages[:1] + messages[cut:] if cut > 1 else messages


def _failed(engine: Any, **kwargs: Any) -> ConformanceReport:
    kwargs.setdefault("transcripts", [coding_session(turns=3, loops=4)])
    kwargs.setdefault("replay_checks", False)
    return check_engine(engine, **kwargs)


@pytest.mark.parametrize(
    ("engine", "rules"),
    [
        (MutatesThenNoop, {"inputs_not_mutated"}),
        (EqualCopy, {"noop_is_input"}),
        (DropsToolResult, {"valid_output"}),
        (Grows, {"never_grows"}),
        (StripsUids, {"uids_kept"}),
        (BadMerge, {"merge_uids"}),
        (ChurningSelect, {"select_stable"}),
        (MutatingSelect, {"inputs_not_mutated"}),
        (InvalidSelect, {"valid_output"}),
        (BadTools, {"tool_json"}),
        (NamelessTool, {"tool_json"}),
        (BadPrune, {"noop_is_input"}),
    ],
)
def test_broken_engines_fail_the_right_rules(engine: type[ContextEngine], rules: set[str]) -> None:
    report = _failed(engine)
    assert set(report.failed_rules()) == rules, report.format()
    failure = report.failures[0]
    assert failure.transcript == "conformance-coding-0"
    if failure.rule != "tool_json":
        assert isinstance(failure.request, int)  # names the request where it failed
    assert f"request {failure.request}" in report.format() or failure.request is None


def test_shared_state_breaks_determinism_and_concurrency() -> None:
    SharedState.sessions.clear()
    report = check_engine(SharedState, transcripts=[coding_session(turns=3, loops=4)], threads=3)
    assert {"deterministic_replay", "concurrent_clones"} <= set(report.failed_rules()), report.format()
    first = next(f for f in report.failures if f.rule == "deterministic_replay")
    assert first.request is not None


def test_name_must_match_plugin_metadata(tmp_path: Path) -> None:
    init = textwrap.dedent("""
        from agent.context_engine import ContextEngine

        class Engine(ContextEngine):
            @property
            def name(self):
                return "other_name"
            def update_from_response(self, usage):
                pass
            def should_compress(self, prompt_tokens=None):
                return False
            def compress(self, messages, current_tokens=None, focus_topic=None):
                return messages
    """)
    write_plugin(tmp_path, "declared_name", init)
    plugins.add_plugin_path(tmp_path)
    try:
        report = _failed("declared_name")
    finally:
        plugins.default_registry()._extra_paths.remove(tmp_path)
        plugins.refresh()
    assert report.failed_rules() == ["name_matches_metadata"]
    assert "declared_name" in str(report.failures[0])


def test_unloadable_engine_is_a_failed_abc_rule() -> None:
    reports = check_engines(["no_such_engine_xyz"])
    assert reports["no_such_engine_xyz"].failed_rules() == ["abc"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_engine_passes(name: str) -> None:
    report = check_engine(name, threads=2)
    assert report.ok, report.format()
    assert report.checked == list(RULES)
    # The built-in conformance conversations and the project's datasets (bundled transcripts).
    assert report.transcripts == [t.transcript_id for t in bundled_transcripts()]
    assert {"coding-agent-short", "support-agent"} <= set(report.transcripts)


@pytest.mark.parametrize(
    ("name", "params", "hooks"),
    [
        ("mask_window", {}, {"select_context", "compress"}),
        ("clear_tool_uses", {"clear_at_least": 300, "keep": 2}, {"prune", "compress"}),
        ("summary", {"summary_mode": "regenerate"}, {"compress"}),
        ("summary", {"preset": "codex"}, {"compress"}),
        ("summary", {"preset": "hermes"}, {"compress"}),
        ("hybrid", {"preset": "jetbrains"}, {"select_context", "compress"}),
        ("lcm", {"leaf_chunk_tokens": 1500, "fresh_tail_count": 8}, {"compress", "tools"}),
        ("retrieval", {"sticky": False}, {"select_context"}),
    ],
)
def test_engines_pass_while_their_hooks_really_act(name: str, params: dict[str, Any], hooks: set[str]) -> None:
    report = check_engine(name, params, transcripts=conformance_transcripts(), replay_checks=False)
    assert report.ok, report.format()
    assert hooks <= {h for h, n in report.exercised.items() if n > 0}, report.exercised


def test_kit_on_a_real_transcript(shared_transcripts: Path) -> None:
    real = load_transcript(shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json", 3)
    report = check_engine("summary", transcripts=[real], context_length=6000, threads=2)
    assert report.ok, report.format()
    assert report.exercised.get("compress", 0) > 0


def test_conformance_conversations_are_valid_and_deterministic() -> None:
    for transcript in conformance_transcripts():
        assert validate_messages(transcript.messages) == []
    assert coding_session().messages == coding_session().messages
    assert chat_session(seed=1).messages != chat_session(seed=2).messages


def test_report_json_and_text() -> None:
    report = _failed(Grows)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is False
    assert data["failures"][0]["rule"] == "never_grows"
    assert isinstance(data["failures"][0]["request"], int)
    assert "FAIL never_grows" in report.format()
    with pytest.raises(AssertionError, match="never_grows"):
        report.assert_ok()


def test_pytest_plugin_fixture(tmp_path: Path) -> None:
    (tmp_path / "test_author_suite.py").write_text(
        textwrap.dedent("""
        from contextlab.engines.passthrough import PassthroughEngine

        def test_my_engine(engine_conformance):
            engine_conformance(PassthroughEngine, replay_checks=False).assert_ok()
    """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
