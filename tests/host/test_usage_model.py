"""``HostSettings.usage_model``: which prompt-token count the engine's ``update_from_response`` receives."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest

import contextlab
from contextlab.engine import ContextEngine, Message
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.host.usage_model import reported_prompt_tokens
from contextlab.transcripts import load_transcript
from contextlab.transcripts.model import RecordedUsage

SHORT = Path(__file__).resolve().parents[2] / "datasets" / "coding-agent-short.jsonl.gz"


class Recorder(ContextEngine):
    """Records every usage dict the host reports (never compresses)."""

    threshold_tokens = 10**9
    seen: ClassVar[list[int]] = []

    @property
    def name(self) -> str:
        return "recorder"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        type(self).seen.append(int(usage["prompt_tokens"]))

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(self, messages: list[Message], current_tokens: int | None = None, **_: Any) -> list[Message]:
        return messages


def run(model: str, transcript: Any = SHORT) -> tuple[list[int], Any]:
    Recorder.seen = []
    result = contextlab.replay(
        transcript, Recorder, HostSettings(context_length=200_000, usage_model=model), probes=False
    )
    assert result.status == "ok", result.error
    return list(Recorder.seen), result.trace


def test_exact_and_rough_feed_their_own_counts_and_the_trace_says_so() -> None:
    exact, trace = run("exact")
    assert exact == trace["prompt_tokens"].tolist() == trace["usage_prompt_tokens"].tolist()
    assert set(trace["usage_model"]) == {"exact"}
    rough, trace = run("rough")
    assert rough == trace["prompt_tokens_rough"].tolist() == trace["usage_prompt_tokens"].tolist()
    assert rough != exact and set(trace["usage_model"]) == {"rough"}


def test_recorded_feeds_the_transcript_usage_while_the_history_is_unchanged() -> None:
    transcript = load_transcript(SHORT)
    first_assistant = next(i for i, m in enumerate(transcript.messages) if m.get("role") == "assistant")
    recorded = dataclasses.replace(transcript, usage={first_assistant: RecordedUsage(prompt_tokens=4_321)})
    seen, trace = run("recorded", recorded)
    assert seen[0] == 4_321  # the recorded request
    assert seen[1:] == trace["prompt_tokens"].tolist()[1:]  # nothing recorded there: exact


def test_recorded_falls_back_to_exact_once_the_history_is_rewritten() -> None:
    assert reported_prompt_tokens("recorded", exact=10, rough=12, recorded=99, rewritten=False) == 99
    assert reported_prompt_tokens("recorded", exact=10, rough=12, recorded=99, rewritten=True) == 10
    assert reported_prompt_tokens("recorded", exact=10, rough=12, recorded=None, rewritten=False) == 10
    assert reported_prompt_tokens("rough", exact=10, rough=12, recorded=99, rewritten=False) == 12


def test_unknown_usage_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="usage_model must be one of exact, rough, recorded"):
        HostSettings(usage_model="guess")
    assert HostSettings(usage_model="rough").label().endswith("usage=rough")
