"""The host repairs its own history before each request, as the real loop does (docs/host-loop.md
§History repair): the rows engines see, the requests sent and the trace all follow the repair."""

from __future__ import annotations

import itertools
import random
from typing import Any, ClassVar

import pandas as pd
import pytest

import contextlab
from contextlab import hermes_texts, load_dataset
from contextlab.engine import Message
from contextlab.host import history as history_module
from contextlab.host.history import WorkingHistory
from contextlab.host.memo import MessageMemo
from contextlab.host.repair import repair_history
from contextlab.host.settings import HostSettings
from contextlab.messages import UidMinter, clone_messages, stamp_identity
from contextlab.tokens import ExactCounter, RoughCounter
from contextlab.transcripts.model import Transcript
from tests.request_log import Requests
from tests.toy_engines import BaseToy

MARKER = hermes_texts.text("corrupted_arguments_marker")


def call(call_id: str, arguments: str = '{"path": "a.py"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": arguments}}


def replay(transcript: Transcript, engine: Any = "passthrough", **settings: Any) -> tuple[Any, Requests]:
    requests = Requests()
    result = contextlab.replay(
        transcript,
        engine,
        HostSettings(context_length=200_000, **settings),
        observers=[requests],  # type: ignore[list-item]
        probes=False,
    )
    assert result.status == "ok", result.error
    return result, requests


def contents(request: list[Message]) -> list[tuple[Any, Any]]:
    return [(m["role"], m.get("content")) for m in request]


def session(name: str, *rows: Message) -> Transcript:
    """A coding session: ``rows``, then the result of call ``c1`` and a closing reply."""
    tail: list[Message] = [{"role": "tool", "tool_call_id": "c1", "content": "def f(): ..."}]
    return Transcript(
        name, [*rows, *tail, {"role": "assistant", "content": "Done."}], system_prompt="You are a coding agent."
    )


def test_adjacent_assistant_rows_are_sent_as_one_from_the_next_request_on() -> None:
    transcript = session(
        "split-turn",
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Picking up the plan. "},
        {"role": "assistant", "content": " Reading a.py.", "tool_calls": [call("c1")]},
    )
    result, requests = replay(transcript)
    # The second request still ends on the first assistant row; the third is built after the repair.
    assert contents(requests.sent[1])[-1] == ("assistant", "Picking up the plan.")
    merged = requests.sent[2][2]
    assert merged["content"] == "Picking up the plan.\nReading a.py."
    assert [c["id"] for c in merged["tool_calls"]] == ["c1"]
    assert [m["role"] for m in requests.sent[2]] == ["system", "user", "assistant", "tool"]
    assert result.trace["history_repairs"].tolist() == [0, 0, 1]
    assert result.summary["history_repairs"] == 1
    # The merge rewrote a row the previous request sent: the prefix breaks there, once.
    assert result.trace["prefix_messages"].tolist()[2] == 2
    assert transcript.messages[1]["content"] == "Picking up the plan. "  # the recording is untouched


def test_adjacent_user_rows_are_merged_in_the_history_and_the_request_bytes_stay() -> None:
    class Seen(BaseToy):
        histories: ClassVar[list[list[Message]]] = []

        def on_turn_complete(self, messages: list[Message], **_: Any) -> None:
            type(self).histories.append(messages)

    transcript = session(
        "two-asks",
        {"role": "user", "content": "Fix the bug."},
        {"role": "user", "content": "And add a test."},
        {"role": "assistant", "content": "On it.", "tool_calls": [call("c1")]},
    )
    Seen.histories = []
    result, requests = replay(transcript, Seen)
    assert contents(requests.sent[0])[1] == ("user", "Fix the bug.\n\nAnd add a test.")
    assert result.trace["history_repairs"].tolist() == [1, 0]
    assert result.trace["prefix_messages"].tolist()[1] == len(requests.sent[0])  # no break
    assert [m["role"] for m in Seen.histories[-1]][:2] == ["user", "assistant"]  # engines see one row


def test_arguments_that_are_not_json_are_sent_as_empty_and_their_result_is_marked() -> None:
    transcript = Transcript(
        "cut-arguments",
        [
            {"role": "user", "content": "Read a.py."},
            {"role": "assistant", "content": "", "tool_calls": [call("c1", '{"path": "a.py"')]},
            {"role": "tool", "tool_call_id": "c1", "content": "def f(): ..."},
            {"role": "assistant", "content": "", "tool_calls": [call("c2", "")]},
            {"role": "tool", "tool_call_id": "c2", "content": "usage: read_file PATH"},
            {"role": "assistant", "content": "Done."},
        ],
        system_prompt="You are a coding agent.",
    )
    result, requests = replay(transcript)
    last = requests.sent[-1]
    assert last[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert last[3]["content"] == f"{MARKER}\ndef f(): ..."
    assert last[4]["tool_calls"][0]["function"]["arguments"] == "{}"  # blank: emptied, not marked
    assert last[5]["content"] == "usage: read_file PATH"
    assert result.trace["history_repairs"].tolist() == [0, 1, 0]  # the host counts the corrupt one
    assert transcript.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.py"'


def test_an_engines_compaction_is_repaired_before_the_next_request() -> None:
    class Splitter(BaseToy):
        """Compacts once into a summary row the host must merge with the user row after it."""

        done: ClassVar[bool] = False

        def should_compress(self, prompt_tokens: int | None = None) -> bool:
            return not type(self).done

        def compress(self, messages: list[Message], current_tokens: int | None = None, **_: Any) -> list[Message]:
            type(self).done = True
            return [{"role": "user", "content": "Summary: the user wants a fix."}, *messages[-1:]]

    transcript = Transcript(
        "summary-then-ask",
        [
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "Which file?"},
            {"role": "user", "content": "a.py"},
            {"role": "assistant", "content": "Fixed."},
        ],
        system_prompt="You are a coding agent.",
    )
    Splitter.done = False
    result, requests = replay(transcript, Splitter)
    assert contents(requests.sent[-1])[1:] == [("user", "Summary: the user wants a fix.\n\na.py")]
    assert result.trace["history_repairs"].sum() == 1


def test_a_clean_history_is_never_walked_and_each_split_turn_is_repaired_once(monkeypatch: Any) -> None:
    walked: list[int] = []
    real = history_module.repair_history

    def counted(rows: Any, marker: str, start: int = 0) -> Any:
        walked.append(len(rows) - start)
        return real(rows, marker, start)

    monkeypatch.setattr(history_module, "repair_history", counted)
    transcript = load_dataset("coding-agent")
    result = contextlab.replay(transcript, "passthrough", context_length=1_000_000, probes=False)
    messages = transcript.messages
    adjacent = sum(a["role"] == b["role"] == "assistant" for a, b in itertools.pairwise(messages))
    assert adjacent == 20
    assert len(walked) == adjacent == result.summary["history_repairs"]
    # Each repair walks from the earlier of the two rows on (the pair and the new tool results), not
    # the whole history of up to 1,190 rows.
    assert max(walked) <= 4


def test_the_break_a_repair_causes_is_attributed_to_it() -> None:
    transcript = load_dataset("coding-agent-short")
    result = contextlab.replay(transcript, "passthrough", context_length=1_000_000)
    trace = result.trace
    repaired = trace[trace["history_repairs"] > 0]
    assert len(repaired) == 1
    assert repaired["break_cause"].tolist() == ["history_repair"]
    assert pd.isna(trace.loc[trace["history_repairs"] == 0, "break_cause"]).all()


def random_batches(rng: random.Random) -> list[list[Message]]:
    """A history as the host appends it (turn leads, a reply, its results), with every shape the
    repair changes: split replies, Codex interims, stray and repeated results, adjacent asks, bad
    and blank arguments, reasoning."""
    batches: list[list[Message]] = []
    for b in range(rng.randint(3, 25)):
        kind = rng.choice(["ask", "ask", "asks", "reply", "reply", "calls", "calls", "interim", "stray"])
        if kind in ("ask", "asks"):
            batches.append([{"role": "user", "content": f"ask {b}.{k}"} for k in range(1 + (kind == "asks"))])
        elif kind in ("reply", "interim"):
            row: Message = {"role": "assistant", "content": f" reply {b} "}
            if kind == "interim":
                row["finish_reason"] = "incomplete"
            if rng.random() < 0.3:
                row["reasoning"] = "thinking " * rng.randint(1, 30)
            batches.append([row])
        elif kind == "stray":
            batches.append([{"role": "tool", "tool_call_id": f"ghost{b}", "content": "lost"}])
        else:
            ids = [f"c{b}_{k}" for k in range(rng.randint(1, 3))]
            arguments = ['{"path": "a.py"}', '{"path": ', "", "{}"]
            calls = [
                {"id": i, "type": "function", "function": {"name": "read", "arguments": rng.choice(arguments)}}
                for i in ids
            ]
            batches.append([{"role": "assistant", "content": rng.choice(["", "look"]), "tool_calls": calls}])
            results = [{"role": "tool", "tool_call_id": i, "content": f"out {i}"} for i in ids if rng.random() < 0.8]
            if results and rng.random() < 0.2:
                results.append(dict(results[0]))  # a result recorded twice
            batches.append(results)
    return [b for b in batches if b]


def state(history: WorkingHistory) -> tuple[Any, ...]:
    return (
        history.peek(),
        history.wires,
        history.exact,
        history.exact_total,
        history.rough_total,
        [history.rough_since(i) for i in range(len(history) + 1)],
        [history.stale_thinking_since(i) for i in range(len(history) + 1)],
        history.newest_thinking,
        history.last_user(),
        [(v.rule, v.index) for v in history.structure.violations()],
        history.structure.needs_sanitizing,
    )


@pytest.mark.parametrize("seed", range(40))
def test_a_partial_repair_leaves_the_history_a_whole_one_would(seed: int) -> None:
    """Repairing from the watch's resume point and re-adding only the rows after it gives the very
    state a repair of the whole list and a full rebuild give, batch after batch."""
    rng = random.Random(seed)
    memo = MessageMemo(ExactCounter(), RoughCounter())
    partial, whole = WorkingHistory(memo, "sys"), WorkingHistory(memo, "sys")
    repairs = 0
    batches = random_batches(rng)
    # Stamped as the host stamps them, so the engine's copies count as settled (compared only when
    # the history says a row changed).
    stamp_identity([row for batch in batches for row in batch], UidMinter(seed))
    for batch in batches:
        partial.append(batch)
        if rng.random() < 0.5:  # an engine read the history before the repair (a pass at a gate)
            partial.engine_views().conversation()
            partial.engine_views().request()
        whole.replace([*whole.peek(), *clone_messages(batch)])
        got = partial.repair(MARKER)
        expected = repair_history(whole.peek(), MARKER)
        if expected.changed:
            whole.replace(expected.rows)
        assert (got is not None) == expected.changed
        if got is not None:
            repairs += 1
            assert got.repairs == expected.repairs and got.first_changed == expected.first_changed
        assert state(partial) == state(whole)
        # The engine's copies follow: those of the kept rows are reused, the others made again.
        views = partial.engine_views()
        assert views.conversation() == whole.peek()
        assert views.request() == [{"role": "system", "content": "sys"}, *whole.peek()]
    assert repairs > 0
