"""The replay host sends (and counts) an assistant's reasoning only on an echo route."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest

import contextlab
from contextlab.engine import Message
from contextlab.engines.compressor import CompressorEngine
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.hostconfig import load_host_config
from contextlab.tokens import estimate_message_tokens_rough
from contextlab.transcripts.model import HostEvent, Transcript

THOUGHT = "Let me reason about the failing test step by step before I act. " * 40


def session(turns: int = 6, reasoning: bool = True) -> Transcript:
    messages: list[Message] = [{"role": "user", "content": "Fix the failing test in src/app.py."}]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": f'{{"n": {i}}}'}}
        assistant: Message = {"role": "assistant", "content": f"Reading part {i}.", "tool_calls": [call]}
        if reasoning:
            assistant["reasoning_content"] = f"{THOUGHT} (step {i})"
        messages += [assistant, {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 30}]
    messages.append({"role": "assistant", "content": "Fixed.", "finish_reason": "stop"})
    return Transcript("reasoning-route", messages, system_prompt="You are a coding agent.")


def replay(transcript: Transcript, **settings: object) -> contextlab.ReplayResult:
    result = contextlab.replay(
        transcript,
        "passthrough",
        HostSettings(context_length=200_000, **settings),
        probes=False,  # type: ignore[arg-type]
    )
    assert result.status == "ok", result.error
    return result


def test_a_strict_route_sends_what_a_session_without_reasoning_sends() -> None:
    with_reasoning = replay(session()).trace
    without = replay(session(reasoning=False)).trace
    for column in ("prompt_tokens", "prompt_tokens_rough"):
        assert with_reasoning[column].tolist() == without[column].tolist()


@pytest.mark.parametrize(
    "route",
    [
        {"provider": "deepseek"},
        {"model": "deepseek-v4-pro"},
        {"provider": "custom", "base_url": "https://api.moonshot.ai/v1"},
    ],
)
def test_an_echo_route_sends_and_counts_every_assistant_turns_reasoning(route: dict[str, str]) -> None:
    strict = replay(session()).trace
    echo = replay(session(), **route).trace
    grown = (echo["prompt_tokens"] - strict["prompt_tokens"]).tolist()
    assert grown[0] == 0  # the first request holds no assistant turn yet
    assert all(later > earlier for earlier, later in itertools.pairwise(grown))  # one thought more each
    rough_grown = (echo["prompt_tokens_rough"] - strict["prompt_tokens_rough"]).tolist()
    assert rough_grown[-1] >= 6 * len(THOUGHT) // 4


class Recording(CompressorEngine):
    """The compressor, remembering each instance the host built."""

    built: ClassVar[list[CompressorEngine]] = []

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        Recording.built.append(self)


def test_the_engine_is_told_the_route() -> None:
    for settings, on_wire in (
        (HostSettings(context_length=200_000, base_url="https://api.deepseek.com"), True),
        (HostSettings(context_length=200_000), False),
    ):
        Recording.built = []
        contextlab.replay(session(), Recording, settings, probes=False)
        told = [engine for engine in Recording.built if engine._model_key is not None]  # update_model called
        assert told and all(engine._stale_thinking_on_wire is on_wire for engine in told)


def test_the_config_file_names_the_route(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent("""
        model:
          default: k2
          provider: custom
          base_url: https://api.moonshot.ai/v1
    """)
    )
    assert load_host_config(path).settings == {
        "model": "k2",
        "provider": "custom",
        "base_url": "https://api.moonshot.ai/v1",
    }
    path.write_text("model:\n  base_url: 8080\n")
    with pytest.raises(ConfigError, match=r"config.yaml: model.base_url must be a string, got int"):
        load_host_config(path)


def test_the_pressure_figure_charges_the_persisted_reasoning_a_strict_route_never_sends() -> None:
    """The host estimates persisted rows for its anchored pressure: an assistant turn that came back
    without usage stays in the rows since the anchor, reasoning included, though the request
    (and so the prompt count) never carries that reasoning on a strict route."""
    events = [HostEvent(5, "no_usage")]  # the third assistant turn: the anchor stays at the second
    with_reasoning, without = session(), session(reasoning=False)
    with_reasoning.host_events, without.host_events = list(events), list(events)
    a, b = replay(with_reasoning).trace, replay(without).trace
    assert a["prompt_tokens"].tolist() == b["prompt_tokens"].tolist()
    extra = (a["pressure_tokens"] - b["pressure_tokens"]).tolist()
    row = with_reasoning.messages[5]
    bare = {k: v for k, v in row.items() if k != "reasoning_content"}
    thought = estimate_message_tokens_rough(row) - estimate_message_tokens_rough(bare)
    assert extra == [0, 0, 0, thought, 0, 0, 0]  # the request after the turn without usage
    echo = replay(with_reasoning, provider="deepseek").trace
    assert (echo["pressure_tokens"] > a["pressure_tokens"]).sum() >= 5  # the wire carries every thought


def test_the_history_keeps_what_each_rows_reasoning_adds_to_the_persisted_estimate() -> None:
    from contextlab.host.history import WorkingHistory
    from contextlab.host.memo import MessageMemo
    from contextlab.tokens import ExactCounter, RoughCounter

    rows = session(turns=3).messages
    for echo in (False, True):
        history = WorkingHistory(MessageMemo(ExactCounter(), RoughCounter(), echo_reasoning=echo), "sys")
        history.append(rows[:4])  # user, assistant (thought), tool, assistant (thought)
        thought = estimate_message_tokens_rough(rows[3]) - estimate_message_tokens_rough(
            {k: v for k, v in rows[3].items() if k != "reasoning_content"}
        )
        expected = 0 if echo else thought  # an echo route's wire form already carries it
        assert history.newest_thinking == expected
        assert history.stale_thinking_since(3) == expected
        assert history.stale_thinking_total == (0 if echo else 2 * thought)
        history.append([rows[4], rows[-1]])  # the newest assistant turn has no thought
        assert history.newest_thinking == 0
        history.replace(history.rows[2:])  # a replacement keeps the rows' figures
        assert history.stale_thinking_total == expected


def test_runs_on_different_routes_are_told_apart() -> None:
    plain, deepseek = replay(session()), replay(session(), provider="deepseek")
    moonshot = replay(session(), base_url="https://api.moonshot.ai/v1")
    labels = {result.summary["params"] for result in (plain, deepseek, moonshot)}
    assert labels == {"ctx=200000", "ctx=200000,provider=deepseek", "ctx=200000,base_url=https://api.moonshot.ai/v1"}
