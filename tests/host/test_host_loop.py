"""Host-loop semantics (docs/host-loop.md): malformed results, compaction timeouts, observation,
session events, retries, usage-less responses and live engine tools. One toy engine per rule."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from contextlab import HostSettings, replay
from contextlab.engine import ContextEngine, Message
from contextlab.errors import ConfigError, TranscriptError
from contextlab.examples import tool_conversation
from contextlab.host.compaction import POOL_WORKERS
from contextlab.transcripts import Transcript
from contextlab.transcripts.model import HostEvent
from contextlab.transcripts.native import dump, header_of
from tests.toy_engines import BaseToy, KeepLastEngine, RecordingEngine, SelectingEngine


def run(engine: ContextEngine, transcript: Transcript | None = None, **settings: Any) -> Any:
    return replay(transcript or tool_conversation(4), engine, HostSettings(**settings))


def with_events(transcript: Transcript, *events: HostEvent) -> Transcript:
    transcript.host_events = list(events)
    return transcript


# ----------------------------------------------------------------------------- malformed results


@pytest.mark.parametrize(
    ("choice", "reason"),
    [
        (lambda req, conv, inc: [req[0], {"content": "no role"}, *req[1:]], "row 1 has no role"),
        (lambda req, conv, inc: [m for m in req if m["role"] != "user"], "no user message left"),
        (lambda req, conv, inc: [], "empty list"),
    ],
)
def test_malformed_selection_falls_open_and_counts_as_invalid(choice: Any, reason: str) -> None:
    baseline = run(BaseToy())
    result = run(SelectingEngine(choice))
    assert result.trace["select_context_rejected"].str.contains(reason).all()
    assert not result.trace["select_context_used"].any()
    assert result.trace["prompt_tokens"].tolist() == baseline.trace["prompt_tokens"].tolist()
    assert (result.trace["invalid_results"] == 1).all()
    assert result.summary["invalid_results"] == len(result.trace)


def test_a_raising_selection_falls_open_but_is_not_an_invalid_result() -> None:
    result = run(SelectingEngine(lambda req, conv, inc: (_ for _ in ()).throw(RuntimeError("boom"))))
    assert result.trace["select_context_rejected"].str.startswith("exception").all()
    assert result.summary["invalid_results"] == 0


class RolelessCompress(KeepLastEngine):
    """Compresses to rows one of which has no role (or to nothing at all)."""

    def __init__(self, empty: bool = False) -> None:
        super().__init__(threshold_tokens=900)
        self.empty = empty

    def compress(self, messages: list[Message], current_tokens: int | None = None, **kwargs: Any) -> list[Message]:
        if self.empty:
            return []
        return [{"content": "a summary without a role"}, *messages[-2:]]


@pytest.mark.parametrize(("empty", "reason"), [(False, "row 0 has no role"), (True, "empty list")])
def test_a_compress_result_with_malformed_rows_is_invalid_and_never_committed(empty: bool, reason: str) -> None:
    result = run(RolelessCompress(empty))
    passes = result.compactions
    assert len(passes) and (passes["outcome"] == "invalid").all()
    assert passes["reason"].str.contains(reason).all()
    assert result.summary["compactions"] == 0
    assert result.summary["invalid_results"] == len(passes)
    assert result.trace["invalid_results"].sum() + (passes["request"] >= len(result.trace)).sum() == len(passes)


# ----------------------------------------------------------------------------- timeouts

RELEASE = threading.Event()  # hung passes wait on it; released after each test


@pytest.fixture(autouse=True)
def release_hung_passes() -> Any:
    RELEASE.clear()
    yield
    RELEASE.set()


class HangingEngine(KeepLastEngine):
    """``compress`` hangs for its first ``hang`` calls; ``should_compress`` answers True ``fires`` times."""

    def __init__(self, threshold_tokens: int, hang: int, fires: int = 10**6, arm_after_turns: int = 0) -> None:
        super().__init__(threshold_tokens=threshold_tokens, keep=2)
        self.hang, self.fires = hang, fires
        self.arm_after_turns = arm_after_turns  # should_compress stays False until that many turns ended
        if arm_after_turns:
            self.armed_fires, self.fires = fires, 0
        self.entered: list[int] = []
        self.ended: list[dict[str, Any]] = []

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        if self.fires <= 0 or not super().should_compress(prompt_tokens):
            return False
        self.fires -= 1
        return True

    def compress(self, messages: list[Message], current_tokens: int | None = None, **kwargs: Any) -> list[Message]:
        self.entered.append(len(messages))
        if len(self.entered) <= self.hang:
            RELEASE.wait(30)
            return messages
        return super().compress(messages, current_tokens)

    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.ended.append(kwargs)
        if self.arm_after_turns and len(self.ended) == self.arm_after_turns:
            self.fires = self.armed_fires  # the next gate to ask is the next turn's turn-start gate


def test_a_pre_api_timeout_ends_the_turn_without_sending_and_later_passes_still_run() -> None:
    # The unseen overhead puts every request over the threshold while the history itself stays
    # small, so the turn-start gate never fires and each turn's first request compresses pre-API.
    engine = HangingEngine(threshold_tokens=4_000, hang=POOL_WORKERS + 2)
    engine.protect_last_n = 1_000
    result = run(engine, tool_conversation(POOL_WORKERS + 4), compress_timeout_s=0.5, fixed_overhead_tokens=5_000)
    engine = result.engine
    trace = result.trace
    timed_out = result.compactions[result.compactions["outcome"] == "timeout"]
    assert len(timed_out) == POOL_WORKERS + 2
    # Every pass ran (more hung passes than the pool has workers), and the later ones committed.
    assert len(engine.entered) > POOL_WORKERS + 2
    assert result.summary["compactions"] >= 1
    pre_api = timed_out[timed_out["trigger"] == "pre_api"]
    assert len(pre_api) >= POOL_WORKERS
    ended = trace[~trace["sent"]]
    assert set(ended["exit_reason"]) == {"context_compression_timeout"}
    assert set(ended["request"]) >= set(pre_api["request"])  # the request a pre-API pass hung on is not sent
    assert set(ended["turn"]) == set(pre_api["turn"])  # ... nor anything after it in its turn
    # A post-tool timeout only skips compression: the turn goes on.
    post_tool = timed_out[timed_out["trigger"] == "post_tool"]
    for request in post_tool["request"]:
        assert bool(trace[trace["request"] == request - 1]["sent"].iloc[0])
    assert result.summary["requests_not_sent"] == len(ended)
    assert result.summary["compression_timeouts"] == POOL_WORKERS + 2
    first = engine.ended[int(pre_api["turn"].min())]
    assert first["failed"] is True and first["turn_exit_reason"] == "context_compression_timeout"
    assert engine.ended[-1]["failed"] is False
    # An unsent request never reaches the engine's usage tracking.
    assert len(engine.usages) == int(trace["sent"].sum())


def test_a_turn_start_timeout_sends_a_request_that_fits_the_window() -> None:
    engine = HangingEngine(threshold_tokens=500, hang=1, fires=1, arm_after_turns=2)
    engine.protect_last_n = 0
    result = run(engine, tool_conversation(4), compress_timeout_s=0.5)
    passes = result.compactions
    assert passes.iloc[0]["trigger"] == "preflight" and passes.iloc[0]["outcome"] == "timeout"
    assert result.trace["sent"].all()
    assert result.summary["requests_not_sent"] == 0


def test_a_turn_start_timeout_fails_closed_when_the_request_exceeds_the_window() -> None:
    engine = HangingEngine(threshold_tokens=900, hang=1, fires=1, arm_after_turns=2)
    engine.protect_last_n = 0
    result = run(engine, tool_conversation(6, tool_chars=1_500), compress_timeout_s=0.5, context_length=2_620)
    first_timeout = result.compactions[result.compactions["outcome"] == "timeout"].iloc[0]
    assert first_timeout["trigger"] == "preflight"
    turn = int(first_timeout["turn"])
    rows = result.trace[result.trace["turn"] == turn]
    assert not rows["sent"].any() and (rows["exit_reason"] == "context_compression_timeout").all()
    assert turn == 2 and result.trace[result.trace["turn"] < turn]["sent"].all()


# ----------------------------------------------------------------------------- observation


class MutatingObserver(BaseToy):
    """Writes into what ``on_turn_complete`` gives it (the guide says: read-only)."""

    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.calls.append(("seen", [m.get("content") for m in messages]))
        for message in messages:
            message["content"] = "scribbled"
        messages.append({"role": "user", "content": "extra"})


def test_on_turn_complete_gets_a_shallow_copy_the_host_history_survives_writes() -> None:
    baseline = run(BaseToy())
    result = run(MutatingObserver())
    assert result.trace["prompt_tokens"].tolist() == baseline.trace["prompt_tokens"].tolist()
    seen = [c[1] for c in result.engine.calls if c[0] == "seen"]
    assert all("scribbled" not in contents for contents in seen)


# ----------------------------------------------------------------------------- retries and usage


def test_select_context_runs_again_on_every_recorded_retry() -> None:
    transcript = with_events(tool_conversation(3), HostEvent(1, "retry", count=2))
    plain = run(SelectingEngine(lambda req, conv, inc: None), tool_conversation(3))
    result = run(SelectingEngine(lambda req, conv, inc: None), transcript)
    assert len(result.engine.seen) == len(plain.engine.seen) + 2
    assert result.trace["retries"].tolist()[0] == 2 and result.trace["retries"].iloc[1:].eq(0).all()
    assert result.summary["retries"] == 2


class AwaitingToy(KeepLastEngine):
    """Exposes the compressor's ``awaiting_real_usage_after_compression`` marker."""

    awaiting_real_usage_after_compression = False

    def compress(self, messages: list[Message], current_tokens: int | None = None, **kwargs: Any) -> list[Message]:
        result = super().compress(messages, current_tokens)
        self.awaiting_real_usage_after_compression = result is not messages
        return result

    def update_from_response(self, usage: dict[str, Any]) -> None:
        super().update_from_response(usage)
        self.awaiting_real_usage_after_compression = False


def test_a_response_without_usage_is_not_reported_unless_a_compaction_awaits_it() -> None:
    base = tool_conversation(3)
    assistants = [i for i, m in enumerate(base.messages) if m["role"] == "assistant"]
    transcript = with_events(tool_conversation(3), HostEvent(assistants[1], "no_usage"))
    result = run(BaseToy(), transcript)
    assert len(result.engine.usages) == len(result.trace) - 1
    assert result.trace["usage_reported"].tolist().count(False) == 1
    assert result.summary["responses_without_usage"] == 1
    assert {} not in result.engine.usages


def test_usage_less_response_after_a_compaction_reports_an_empty_dict() -> None:
    engine = AwaitingToy(threshold_tokens=900, keep=2)
    first = run(engine, tool_conversation(4))
    compacted = first.trace[first.trace["compressed"]]["request"].tolist()
    assert compacted, "the toy must compact for this test to mean anything"
    assistants = [i for i, m in enumerate(tool_conversation(4).messages) if m["role"] == "assistant"]
    transcript = with_events(tool_conversation(4), HostEvent(assistants[compacted[0]], "no_usage"))
    result = run(AwaitingToy(threshold_tokens=900, keep=2), transcript)
    assert {} in result.engine.usages


# ----------------------------------------------------------------------------- sessions


class SessionToy(BaseToy):
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.calls.append(("start", (session_id, kwargs.get("old_session_id"))))

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        self.calls.append(("end", (session_id, len(messages))))

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self.calls.append(("reset", None))


@pytest.mark.parametrize("kind", ["new", "reset"])
def test_a_new_or_reset_event_ends_and_resets_the_session_and_empties_the_history(kind: str) -> None:
    base = tool_conversation(4)
    users = [i for i, m in enumerate(base.messages) if m["role"] == "user"]
    result = run(SessionToy(), with_events(tool_conversation(4), HostEvent(users[2], kind)))
    calls = [c for c in result.engine.calls if c[0] in ("start", "end", "reset")]
    names = [c[0] for c in calls]
    # The CLI's /new (alias /reset): on_session_end with the old history, on_session_reset, and no
    # on_session_start (reset_session_state() without transition arguments).
    assert names == ["start", "end", "reset", "end"]
    old_id, final_id = calls[0][1][0], calls[3][1][0]
    assert calls[1][1] == (old_id, users[2]) and final_id != old_id
    assert calls[3][1] == (final_id, len(base.messages) - users[2])
    trace = result.trace
    boundary = trace[trace["session_event"].notna()]
    assert boundary["session_event"].tolist() == [kind] and int(boundary["turn"].iloc[0]) == 2
    # The first request of the new session holds only the new user message (plus the system prompt).
    assert int(boundary["n_messages"].iloc[0]) == 2
    assert result.summary["session_boundaries"] == 1


def test_a_new_session_before_any_history_ends_nothing() -> None:
    # The CLI delivers on_session_end only when the old session has a history.
    result = run(SessionToy(), with_events(tool_conversation(2), HostEvent(0, "new")))
    names = [c[0] for c in result.engine.calls if c[0] in ("start", "end", "reset")]
    assert names == ["start", "reset", "end"]


def test_a_given_hermes_home_is_passed_and_kept(tmp_path: Path) -> None:
    engine = run(RecordingEngine(), tool_conversation(2), hermes_home=str(tmp_path)).engine
    start = next(call[1][1] for call in engine.calls if call[0] == "on_session_start")
    assert start["hermes_home"] == str(tmp_path) and tmp_path.is_dir()
    with pytest.raises(ConfigError, match="hermes_home is not a directory"):
        run(RecordingEngine(), tool_conversation(2), hermes_home=str(tmp_path / "missing"))


class BoundaryToy(KeepLastEngine):
    """Compacts to its last rows and records the session hooks around each commit."""

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.calls.append(("start", (session_id, kwargs.get("boundary_reason"))))

    def on_session_end(self, session_id: str, messages: list[Message]) -> None:
        self.calls.append(("end", (session_id, len(messages))))


@pytest.mark.parametrize("store", [True, False])
def test_a_committed_compaction_ends_the_session_for_the_engine_when_the_host_keeps_a_store(store: bool) -> None:
    result = run(BoundaryToy(threshold_tokens=900, keep=2), tool_conversation(6), session_store=store)
    compacted = result.compactions[result.compactions["outcome"] == "committed"]
    assert len(compacted) >= 2, "the toy must compact for this test to mean anything"
    hooks = [c for c in result.engine.calls if c[0] in ("start", "end")]
    session = hooks[0][1][0]
    assert hooks[0] == ("start", (session, None)) and hooks[-1][0] == "end"  # the session's own start and end
    boundary = hooks[1:-1]
    if store:
        # commit_memory_session: the history as it was before the pass, then the boundary's start.
        before = compacted["messages_before"].tolist()
        assert boundary == [h for n in before for h in (("end", (session, n)), ("start", (session, "compression")))]
    else:
        assert boundary == [("start", (session, "compression"))] * len(compacted)


def test_a_misplaced_host_event_is_one_clear_error() -> None:
    with pytest.raises(TranscriptError, match=r"host_events\[0\].*must precede a user message"):
        run(BaseToy(), with_events(tool_conversation(2), HostEvent(1, "new")))
    with pytest.raises(TranscriptError, match="outside the"):
        run(BaseToy(), with_events(tool_conversation(2), HostEvent(99, "retry")))
    with pytest.raises(ValueError, match="kind"):
        HostEvent(0, "bogus")


def test_host_events_round_trip_in_the_native_format(tmp_path: Path) -> None:
    from contextlab import load_transcript

    plain = tool_conversation(2)
    assert "host_events" not in header_of(plain)  # older files keep their bytes
    transcript = with_events(tool_conversation(2), HostEvent(0, "new"), HostEvent(1, "retry", count=3))
    dump(transcript, tmp_path / "t.jsonl")
    loaded = load_transcript(tmp_path / "t.jsonl")
    assert loaded.host_events == transcript.host_events


# ----------------------------------------------------------------------------- engine tools


class ToolToy(BaseToy):
    """An engine with one tool; its live answer names itself."""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": "toy_recall", "description": "recall", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        self.calls.append(("tool", (name, args, len(kwargs.get("messages") or []))))
        return json.dumps({"answer": f"LIVE {args.get('q')}"})

    def on_turn_complete(self, messages: list[Message], usage: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.calls.append(("turn", [m.get("content") for m in messages if m.get("role") == "tool"]))


def recall_transcript() -> Transcript:
    transcript = tool_conversation(3)
    call = {"id": "call_recall", "type": "function", "function": {"name": "toy_recall", "arguments": '{"q": "x"}'}}
    transcript.messages[1:1] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_recall", "content": "RECORDED " * 50},
    ]
    return transcript


def test_recorded_engine_tools_keep_the_recorded_result() -> None:
    result = run(ToolToy(), recall_transcript())
    assert not [c for c in result.engine.calls if c[0] == "tool"]
    assert result.summary["engine_tool_results"] == 0
    turns = [c[1] for c in result.engine.calls if c[0] == "turn"]
    assert any("RECORDED" in str(t) for t in turns[0])


def test_live_engine_tools_send_the_engine_answer_and_mark_the_row() -> None:
    recorded = run(ToolToy(), recall_transcript())
    result = run(ToolToy(), recall_transcript(), engine_tools="live")
    tool_calls = [c[1] for c in result.engine.calls if c[0] == "tool"]
    assert tool_calls == [("toy_recall", {"q": "x"}, 2)]  # messages: the user ask and the call so far
    turns = [c[1] for c in result.engine.calls if c[0] == "turn"]
    assert '{"answer": "LIVE x"}' in turns[0] and not any("RECORDED" in str(t) for t in turns[0])
    assert result.trace["engine_tool_results"].tolist()[0] == 1
    assert result.summary["engine_tool_results"] == 1
    # The later requests carry the (much shorter) live answer.
    assert result.trace["prompt_tokens"].iloc[1] < recorded.trace["prompt_tokens"].iloc[1]


class ToolsSeen:
    """Keeps the tool list of the first request."""

    def __init__(self) -> None:
        self.tools: list[dict[str, Any]] | None = None

    def columns(self) -> list[str]:
        return []

    def observe(self, view: Any) -> dict[str, Any]:
        if self.tools is None:
            self.tools = list(view.tools)
        return {}

    def summary(self) -> dict[str, Any]:
        return {}

    def clone(self) -> ToolsSeen:
        return self


def test_engine_tools_join_the_list_wrapped_once_and_a_listed_name_is_still_answered_live() -> None:
    transcript = recall_transcript()
    listed = {"type": "function", "function": {"name": "toy_recall", "description": "as recorded", "parameters": {}}}
    transcript.tools = [*transcript.tools, listed]
    seen = ToolsSeen()
    result = replay(transcript, ToolToy(), HostSettings(engine_tools="live"), observers=[seen])
    assert seen.tools is not None
    assert [t for t in seen.tools if t["function"]["name"] == "toy_recall"] == [listed]  # the recorded entry stays
    assert [c[1][0] for c in result.engine.calls if c[0] == "tool"] == ["toy_recall"]  # the engine still answers
    fresh = ToolsSeen()
    replay(recall_transcript(), ToolToy(), observers=[fresh])
    wrapped = {"type": "function", "function": ToolToy().get_tool_schemas()[0]}
    assert fresh.tools is not None and fresh.tools[-1] == wrapped


def test_engine_tools_setting_is_validated() -> None:
    from contextlab.errors import ConfigError

    with pytest.raises(ConfigError, match="engine_tools"):
        HostSettings(engine_tools="sometimes")
