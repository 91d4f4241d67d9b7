"""The cache model inside a replay: columns, summary, usage fed to the engine, determinism."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from contextlab.api import replay
from contextlab.cache import CacheObserver
from contextlab.engines.passthrough import PassthroughEngine
from contextlab.transcripts import Transcript


def transcript(turns: int = 12) -> Transcript:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " + "context " * 150})
        messages.append({"role": "assistant", "content": f"answer {i} " + "detail " * 100})
    return Transcript("synthetic", messages, system_prompt="You are a careful assistant. " * 120)


class Recorder(PassthroughEngine):
    seen: ClassVar[list[dict[str, Any]]] = []

    def update_from_response(self, usage: dict[str, Any]) -> None:
        type(self).seen.append(dict(usage))
        super().update_from_response(usage)


def test_columns_for_one_and_several_profiles() -> None:
    obs = CacheObserver(["anthropic:claude-opus-5-5", "openai:gpt-5.5", "gemini:gemini-2.5-flash"], "system_and_3")
    result = replay(transcript(), "passthrough", observers=[obs])
    trace = result.trace
    for column in obs.columns():
        assert column in trace.columns
    assert obs.columns()[:4] == ["cache_read_tokens", "cache_write_tokens", "uncached_tokens", "cost_usd"]
    assert "openai.cache_read_tokens" in trace.columns and "gemini.cost_usd" in trace.columns
    total = trace["cache_read_tokens"] + trace["cache_write_tokens"] + trace["uncached_tokens"]
    assert (total == trace["prompt_tokens"]).all()
    assert trace["cache_read_tokens"].iloc[0] == 0 and trace["cache_read_tokens"].iloc[1:].gt(0).all()
    summary = result.summary
    assert 0.5 < summary["cache_hit_rate"] < 1.0
    assert summary["cost_usd"] == trace["cost_usd"].sum()
    assert summary["openai.cache_hit_rate"] > 0.5
    assert summary["cost_ratio"] < 1.0


def test_no_caching_policy_reads_nothing_and_costs_more() -> None:
    cached = replay(transcript(), "passthrough", observers=[CacheObserver("anthropic", "system_and_3")])
    uncached = replay(transcript(), "passthrough", observers=[CacheObserver("anthropic", "none")])
    assert uncached.trace["cache_read_tokens"].sum() == 0
    assert uncached.summary["cost_usd"] > cached.summary["cost_usd"]


def test_cache_buckets_feed_the_engine_usage_dict() -> None:
    Recorder.seen = []
    result = replay(transcript(), Recorder, observers=[CacheObserver("anthropic", "system_and_3")])
    assert [u["cache_read_tokens"] for u in Recorder.seen] == list(result.trace["cache_read_tokens"])
    assert all(
        u["input_tokens"] == u["prompt_tokens"] - u["cache_read_tokens"] - u["cache_write_tokens"]
        for u in Recorder.seen
    )


def test_deterministic_and_observer_is_cloned_per_run() -> None:
    obs = CacheObserver(["anthropic", "gemini"], "rolling_anchor")
    a = replay(transcript(), "passthrough", observers=[obs]).trace
    b = replay(transcript(), "passthrough", observers=[obs]).trace
    timing = ["engine_ms"]
    pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing))


def test_readme_snippet_top_level_imports(shared_transcripts: Path) -> None:
    from contextlab import CacheObserver as TopLevelObserver
    from contextlab import replay as top_replay

    cache = TopLevelObserver(["anthropic:claude-opus-5-5", "openai:gpt-5.5", "gemini"], "system_and_3")
    result = top_replay(shared_transcripts / "claude-code" / "tool_heavy.jsonl", "passthrough", observers=[cache])
    columns = ["prompt_tokens", "cache_read_tokens", "cache_write_tokens", "uncached_tokens", "cost_usd"]
    assert set(columns) <= set(result.trace.columns)
    assert 0 <= result.summary["cache_hit_rate"] <= 1 and result.summary["cost_usd"] > 0
    assert "openai.cache_hit_rate" in result.summary
