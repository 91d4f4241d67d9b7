"""The host's incremental paths give exactly what the whole-list computations give."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from contextlab import HostSettings, replay
from contextlab.engine import ContextEngine
from contextlab.host.sanitized import IncrementalSanitizer
from contextlab.messages import sanitize_request
from contextlab.tokens import ExactCounter, RoughCounter
from contextlab.transcripts import Transcript


def _random_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    open_ids: list[str] = []
    for i in range(n):
        kind = rng.choice(["user", "user", "assistant", "call", "tool", "tool", "orphan", "thinking", "bad"])
        if kind == "user":
            rows.append({"role": "user", "content": f"user {i}", "message_uid": f"u{i}"})
        elif kind == "assistant":
            rows.append({"role": "assistant", "content": f"answer {i}"})
        elif kind == "call":
            ids = [f"c{i}_{k}" for k in range(rng.randint(1, 2))]
            open_ids = list(ids)
            calls = [{"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in ids]
            rows.append({"role": "assistant", "content": rng.choice(["", "calling"]), "tool_calls": calls})
        elif kind == "tool" and open_ids:
            rows.append({"role": "tool", "tool_call_id": open_ids.pop(0), "content": f"out {i}"})
        elif kind == "orphan":
            rows.append({"role": "tool", "tool_call_id": rng.choice(["ghost", f"c{i + 3}_0"]), "content": "x"})
        elif kind == "thinking":
            rows.append({"role": "assistant", "content": "", "reasoning_content": "hmm"})
        elif kind == "bad":
            rows.append({"role": "narrator", "content": "?"})
    return rows


def test_incremental_sanitizer_matches_the_whole_list_pass_at_every_length() -> None:
    rng = random.Random(5)
    exact, rough = ExactCounter(), RoughCounter()
    rewrites_of_emitted_rows = 0
    for _ in range(40):
        rows = _random_rows(rng, 40)
        sanitizer = IncrementalSanitizer(exact, rough)
        emitted: list[tuple[Sequence[Any], Sequence[int], list[Any], list[int]]] = []
        for k, row in enumerate(rows, start=1):
            sanitizer.feed(row, exact.message(row), rough.message(row))
            if rng.random() < 0.5 or k == len(rows):
                previous = sanitizer.last_emit
                messages, tokens, tokens_total, rough_total, unchanged = sanitizer.emit()
                expected = sanitize_request(rows[:k])
                assert messages == expected
                assert tokens == [exact.message(m) for m in expected]
                emitted.append((messages, tokens, expected, list(tokens)))
                if previous is not None and unchanged < len(previous) - 1:
                    rewrites_of_emitted_rows += 1  # a row an earlier request showed was rewritten
                # The totals are kept up to date as rows change (refolds included), not re-summed.
                assert tokens_total == sum(tokens)
                assert rough_total == sum(rough.message(m) for m in expected)
                assert unchanged <= len(messages)
                if previous is not None:
                    assert all(a is b for a, b in zip(messages[:unchanged], previous[:unchanged], strict=True))
        # Requests are O(1) views of the sanitizer's lists: every one still shows what it showed when
        # it was emitted, after later rows rewrote or merged what it ended with.
        for messages, tokens, expected, expected_tokens in emitted:
            assert list(messages) == expected and list(tokens) == expected_tokens
    assert rewrites_of_emitted_rows > 10


class _Mutator(ContextEngine):
    """Scribbles on every row it is handed and returns them (must never reach the host)."""

    name = "mutator"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None) -> list[dict[str, Any]]:
        return messages

    def select_context(self, request_messages: list[dict[str, Any]], **_: Any) -> list[dict[str, Any]] | None:
        for m in request_messages[1:]:
            if isinstance(m.get("content"), str):
                m["content"] += " [scribbled]"
        return request_messages


class _Keeper(_Mutator):
    """Returns what it is handed, untouched."""

    def select_context(self, request_messages: list[dict[str, Any]], **_: Any) -> list[dict[str, Any]] | None:
        return request_messages


def _session() -> Transcript:
    messages: list[dict[str, Any]] = []
    for i in range(12):
        messages.append({"role": "user", "content": f"question {i}"})
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"file {i}"})
        messages.append({"role": "assistant", "content": f"done {i}"})
    return Transcript("views", messages, "system prompt")


def test_a_mutating_engine_changes_its_requests_but_never_the_history() -> None:
    settings = HostSettings(context_length=100_000)
    scribbled = replay(_session(), _Mutator, settings)
    plain = replay(_session(), "passthrough", settings)
    # Each request carries this call's scribbles only: the rows handed out were pristine every time.
    assert (scribbled.trace["prompt_tokens"] > plain.trace["prompt_tokens"]).all()
    grows = scribbled.trace["prompt_tokens"] - plain.trace["prompt_tokens"]
    assert list(grows) == sorted(grows)
    history = replay(_session(), _Keeper, settings)  # rows returned as handed: the plain request
    assert list(history.trace["prompt_tokens"]) == list(plain.trace["prompt_tokens"])
    assert list(history.trace["prefix_tokens"]) == list(plain.trace["prefix_tokens"])


def test_history_snapshot_keeps_its_moment_without_copying() -> None:
    from contextlab.host.history import WorkingHistory
    from contextlab.host.memo import MessageMemo

    history = WorkingHistory(MessageMemo(ExactCounter(), RoughCounter()), "sys")
    history.append([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    snapshot = history.snapshot()
    live = history.peek()
    history.append([{"role": "user", "content": "c"}])
    assert history.peek() is live  # extended in place: the snapshot did not make the append copy
    assert len(snapshot) == 2 and [m["content"] for m in snapshot] == ["a", "b"]
    assert snapshot[-1]["content"] == "b" and snapshot[:1] == [live[0]]
    assert snapshot == live[:2] and snapshot != live
    with pytest.raises(IndexError):
        snapshot[2]
    history.replace([])  # a replacement starts a new list: the snapshot still holds its rows
    assert [m["content"] for m in snapshot] == ["a", "b"]


def test_sanitizer_fed_uncounted_user_rows_counts_what_it_sends() -> None:
    rng = random.Random(11)
    exact, rough = ExactCounter(), RoughCounter()
    for _ in range(30):
        rows = _random_rows(rng, 30)
        sanitizer = IncrementalSanitizer(exact, rough)
        for k, row in enumerate(rows, start=1):
            uncounted = row.get("role") == "user" and isinstance(row.get("content"), str)
            sanitizer.feed(row, -1 if uncounted else exact.message(row), rough.message(row))
            if rng.random() < 0.5 or k == len(rows):
                messages, tokens, tokens_total, rough_total, _ = sanitizer.emit()
                expected = sanitize_request(rows[:k])
                assert messages == expected
                assert tokens == [exact.message(m) for m in expected]
                assert tokens_total == sum(tokens)
                assert rough_total == sum(rough.message(m) for m in expected)


class _RecordingEncoding:
    """Counts one token per character and records every text it is asked to encode."""

    name = "recording"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.texts.append(text)
        return [0] * len(text)


def test_a_user_row_merged_into_the_next_one_is_never_tokenized_alone() -> None:
    from contextlab.host.history import WorkingHistory
    from contextlab.host.memo import MessageMemo

    exact = ExactCounter()
    recorder = _RecordingEncoding()
    exact._encoding = recorder
    history = WorkingHistory(MessageMemo(exact, RoughCounter()), "sys")
    summary, ask = "a long summary of the earlier conversation", "and now the next question"
    history.append([{"role": "user", "content": summary}, {"role": "user", "content": ask}])
    history.append([{"role": "assistant", "content": "an answer"}])
    assert history.structure.needs_sanitizing
    emitted = history.sanitized([exact.message({"role": "system", "content": "sys"})])
    assert [m["content"] for m in emitted.messages[1:]] == [f"{summary}\n\n{ask}", "an answer"]
    assert summary not in recorder.texts and ask not in recorder.texts
    # Reading the per-row counts takes them then, equal to counting each row on arrival.
    assert history.exact == [exact.count_message(w) for w in history.wires]
    assert history.exact_total == sum(history.exact)
    assert history.row_counts(0)[1] == exact.count_message(history.wires[0])
