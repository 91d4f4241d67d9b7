"""The LLM summarizer against a real OpenAI-compatible HTTP server on 127.0.0.1 (no mocked client)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from builders import conversation
from llm_stub import StubServer

from contextlab import clock
from contextlab.engines.compressor import CompressorEngine
from contextlab.engines.compressor.assembly import SUMMARY_PREFIX
from contextlab.engines.summarizers import HOST_TEMPLATE, FailureKind, SummaryFailure, SummaryRequest
from contextlab.engines.summarizers.llm import LLMSummarizer, build_prompt, cache_key

pytest.importorskip("openai")


def request(**overrides: object) -> SummaryRequest:
    fields: dict[str, object] = {"turns": conversation(3), "budget_tokens": 2000, "template": HOST_TEMPLATE}
    fields.update(overrides)
    return SummaryRequest(**fields)  # type: ignore[arg-type]


def summarizer(stub: StubServer, tmp_path: Path, **kwargs: object) -> LLMSummarizer:
    options: dict[str, object] = {
        "model": "stub-model",
        "base_url": stub.base_url,
        "api_key": "sk-test-not-real",
        "cache_dir": tmp_path / "cache",
        "timeout_s": 5.0,
    }
    options.update(kwargs)
    return LLMSummarizer(**options)  # type: ignore[arg-type]


def test_answers_with_host_prompt_and_no_max_tokens(stub: StubServer, tmp_path: Path) -> None:
    stub.script.append(("ok", "## Goal\n- ship the fix"))
    text = summarizer(stub, tmp_path).summarize(request(focus_topic="module_2"))
    assert text == "## Goal\n- ship the fix"
    (sent,) = stub.requests
    body = sent["body"]
    assert sent["path"].endswith("/chat/completions")
    assert sent["auth"] == "Bearer sk-test-not-real"
    assert body["model"] == "stub-model"
    assert "max_tokens" not in body and "max_completion_tokens" not in body
    (message,) = body["messages"]
    assert message["role"] == "user"
    prompt = message["content"]
    assert "TURNS TO SUMMARIZE:" in prompt and "[USER]: Task 0" in prompt
    assert "[TOOL RESULT call_1]:" in prompt and "[Tool calls: read_file(" in prompt
    assert prompt.index("## Historical Task Snapshot") < prompt.index("## Critical Context")
    assert "Target ~2000 tokens" in prompt
    assert prompt.rstrip().split("\n\n")[-1].startswith("FOCUS TOPIC: module_2")  # focus goes last


def test_iterative_prompt_and_memory_block() -> None:
    prompt = build_prompt(request(previous_summary="## Goal\n- old goal", memory_context="user likes tabs"))
    assert "PREVIOUS SUMMARY:\n## Goal\n- old goal" in prompt
    assert "NEW TURNS TO INCORPORATE:" in prompt and "TURNS TO SUMMARIZE:" not in prompt
    assert '<memory-provider-context>\n"user likes tabs"\n</memory-provider-context>' in prompt


def test_record_then_replay_offline(stub: StubServer, tmp_path: Path) -> None:
    stub.script.append(("ok", "## Goal\n- recorded"))
    first = summarizer(stub, tmp_path).summarize(request())
    key = cache_key("stub-model", build_prompt(request()))
    assert (tmp_path / "cache" / key[:2] / f"{key}.json").is_file()
    # A second replay: no network at all (dead base URL), replay-only mode, identical text.
    offline = LLMSummarizer(
        model="stub-model", base_url="http://127.0.0.1:9/v1", cache_dir=tmp_path / "cache", mode="replay"
    )
    assert offline.summarize(request()) == first
    assert offline.calls == 0 and len(stub.requests) == 1
    with pytest.raises(SummaryFailure) as miss:
        offline.summarize(request(focus_topic="something else"))
    assert miss.value.kind is FailureKind.NO_PROVIDER


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        (("status", 401, {"message": "bad key", "type": "invalid_request_error"}), FailureKind.AUTH),
        (("status", 403, {"message": "forbidden"}), FailureKind.AUTH),
        (("status", 402, {"message": "payment required"}), FailureKind.QUOTA),
        (("status", 429, {"message": "quota", "code": "insufficient_quota"}), FailureKind.QUOTA),
        (("status", 429, {"message": "slow down", "code": "rate_limit_exceeded"}), FailureKind.TIMEOUT),
        (("status", 500, {"message": "boom"}), FailureKind.OTHER),
        (("status", 404, {"message": "no such model"}), FailureKind.MODEL_NOT_FOUND),
        (("badjson",), FailureKind.JSON),
        (("close",), FailureKind.STREAM),
        (("ok", "   "), FailureKind.EMPTY),
    ],
)
def test_failure_classes(stub: StubServer, tmp_path: Path, action: tuple[object, ...], kind: FailureKind) -> None:
    stub.script.append(action)
    with pytest.raises(SummaryFailure) as failure:
        summarizer(stub, tmp_path).summarize(request())
    assert failure.value.kind is kind
    assert not list((tmp_path / "cache").rglob("*.json"))  # failures are never recorded


def test_hang_is_a_timeout(stub: StubServer, tmp_path: Path) -> None:
    stub.script.append(("hang", 10.0))
    with pytest.raises(SummaryFailure) as failure:
        summarizer(stub, tmp_path, timeout_s=0.5).summarize(request())
    assert failure.value.kind is FailureKind.TIMEOUT


def test_connection_refused_is_network(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the call: nothing listens there
    s = LLMSummarizer(model="m", base_url=f"http://127.0.0.1:{port}/v1", cache_dir=tmp_path, timeout_s=2)
    with pytest.raises(SummaryFailure) as failure:
        s.summarize(request())
    assert failure.value.kind is FailureKind.NETWORK
    assert failure.value.kind.aborts


def test_separate_summary_model_retries_once_on_main_model(stub: StubServer, tmp_path: Path) -> None:
    stub.script.extend([("status", 404, {"message": "no such model"}), ("ok", "## Goal\n- from main")])
    s = summarizer(stub, tmp_path, model="aux-model", main_model="main-model")
    assert s.summarize(request()) == "## Goal\n- from main"
    assert [r["body"]["model"] for r in stub.requests] == ["aux-model", "main-model"]


# ----------------------------------------------------------------------- wired into the compressor


def summary_of(messages: list[dict[str, object]]) -> str:
    return next(str(m["content"]) for m in messages if SUMMARY_PREFIX in str(m.get("content")))


def engine_with(stub: StubServer, tmp_path: Path, **kwargs: object) -> CompressorEngine:
    options = {
        "model": "stub-model",
        "base_url": stub.base_url,
        "cache_dir": str(tmp_path / "c"),
        "timeout_s": 5.0,
    }
    options.update(kwargs)
    engine = CompressorEngine(summarizer="llm", summarizer_options=options)
    engine.update_model("gpt-4o", 200_000)
    return engine


def test_compressor_uses_llm_summary(stub: StubServer, tmp_path: Path) -> None:
    stub.script.append(("ok", "## Historical Task Snapshot\nwhatever\n\n## Goal\n- inspect modules"))
    engine = engine_with(stub, tmp_path)
    history = conversation(30, 4000)
    out = engine.compress(history)
    assert out is not history
    summary = summary_of(out)
    assert out[3]["content"] == summary  # the head (3 messages) is protected on the first compaction
    assert "- inspect modules" in summary
    # The snapshot section is overwritten deterministically from the newest compacted user turn.
    assert "User asked (deterministic, from compacted turns): 'Task" in summary
    assert "whatever" not in summary


def test_auth_failure_aborts_with_input_unchanged(stub: StubServer, tmp_path: Path) -> None:
    stub.script.append(("status", 401, {"message": "bad key"}))
    engine = engine_with(stub, tmp_path)
    history = conversation(30, 4000)
    assert engine.compress(history) is history
    assert engine.compression_count == 0 and engine._last_compress_aborted
    assert engine.last_failure is not None and engine.last_failure.kind is FailureKind.AUTH


def test_timeout_ladder_on_the_virtual_clock(stub: StubServer, tmp_path: Path) -> None:
    engine = engine_with(stub, tmp_path)
    with clock.using(clock.VirtualClock(1_000.0)) as vc:
        for expected in (60, 300, 900, 900):
            stub.script.append(("status", 504, {"message": "gateway timeout"}))
            out = engine.compress(conversation(30, 4000), force=True)
            assert "## Completed Actions" in summary_of(out)  # deterministic fallback summary
            assert engine.should_compress_info(10**9) == (False, f"cooldown:{expected}")
            vc.advance(expected - 1)
            assert engine.should_compress_info(10**9)[1] == "cooldown:1"
            vc.advance(1)
        # A success resets the ladder: the next timeout is 60 s again.
        engine.compress(conversation(30, 4000), force=True)
        stub.script.append(("status", 504, {"message": "gateway timeout"}))
        engine.compress(conversation(31, 4000), force=True)  # a new prompt: not in the cache
        assert engine.should_compress_info(10**9)[1] == "cooldown:60"


def test_other_failure_falls_back_and_cools_down_60s(stub: StubServer, tmp_path: Path) -> None:
    engine = engine_with(stub, tmp_path)
    with clock.using(clock.VirtualClock(5_000.0)):
        stub.script.append(("status", 500, {"message": "boom"}))
        out = engine.compress(conversation(30, 4000))
        # The host records the committed pass (upstream's compress_context): the fallback counts then.
        engine.record_completed_compaction(used_fallback=engine._last_summary_fallback_used)
        assert "## Completed Actions" in summary_of(out)
        assert engine.should_compress_info(10**9)[1] == "cooldown:60"
        assert engine.thrash.fallback_streak == 1


def test_json_failure_cools_down_30s(stub: StubServer, tmp_path: Path) -> None:
    engine = engine_with(stub, tmp_path)
    with clock.using(clock.VirtualClock(5_000.0)):
        stub.script.append(("badjson",))
        engine.compress(conversation(30, 4000))
        assert engine.should_compress_info(10**9)[1] == "cooldown:30"


def test_engine_with_llm_summarizer_can_be_cloned_after_use(stub: StubServer, tmp_path: Path) -> None:
    engine = engine_with(stub, tmp_path)
    engine.compress(conversation(30, 4000))
    clone = engine.clone_for_agent()
    assert isinstance(clone, CompressorEngine) and clone.summarizer is not engine.summarizer
    stub.script.append(("ok", "## Goal\n- from the clone"))
    out = clone.compress(conversation(31, 4000))
    assert "- from the clone" in summary_of(out)


def test_no_provider_configured_cools_down_600s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CONTEXTLAB_LLM_BASE_URL", "OPENAI_BASE_URL", "CONTEXTLAB_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    engine = CompressorEngine(summarizer="llm", summarizer_options={"cache_dir": str(tmp_path)})
    engine.update_model("gpt-4o", 200_000)
    with clock.using(clock.VirtualClock(0.0)):
        out = engine.compress(conversation(30, 4000))
        assert "## Completed Actions" in summary_of(out)  # deterministic fallback
        assert engine.last_failure is not None and engine.last_failure.kind is FailureKind.NO_PROVIDER
        assert engine.should_compress_info(10**9)[1] == "cooldown:600"


def test_unknown_summarizer_is_an_engine_error() -> None:
    from contextlab.errors import EngineError

    with pytest.raises(EngineError, match="unknown summarizer 'gpt'"):
        CompressorEngine(summarizer="gpt")
