"""Recorded usage parsers, detected by shape (caching.md §8.6)."""

from __future__ import annotations

import pytest

from contextlab.cache.usage import check_invariants, detect_shape, parse_usage
from contextlab.errors import TranscriptError


def test_anthropic_doc_example_and_ttl_split() -> None:
    u = parse_usage(
        {
            "usage": {
                "input_tokens": 50,
                "cache_read_input_tokens": 100_000,
                "cache_creation_input_tokens": 0,
                "output_tokens": 7,
            }
        }
    )
    assert (u.shape, u.total_in, u.cache_read, u.cache_write, u.uncached_in, u.output) == (
        "anthropic",
        100_050,
        100_000,
        0,
        50,
        7,
    )
    split = parse_usage(
        {
            "input_tokens": 3,
            "cache_creation_input_tokens": 8037,
            "cache_read_input_tokens": 17842,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 8037},
            "output_tokens": 1,
        }
    )
    assert (split.cache_write_1h, split.cache_write_5m, split.total_in) == (8037, 0, 25882)
    assert check_invariants(split) == []


def test_anthropic_stream_and_diagnostics() -> None:
    events = [
        {
            "type": "message_start",
            "message": {
                "usage": {
                    "input_tokens": 10,
                    "cache_read_input_tokens": 90,
                    "cache_creation_input_tokens": 0,
                    "output_tokens": 1,
                }
            },
        },
        {"type": "content_block_delta"},
        {"type": "message_delta", "usage": {"output_tokens": 42}},
    ]
    u = parse_usage(events)
    assert (u.total_in, u.cache_read, u.output) == (100, 90, 42)
    d = parse_usage(
        {
            "usage": {"input_tokens": 5, "output_tokens": 1},
            "diagnostics": {"cache_miss_reason": {"type": "tools_changed"}},
        }
    )
    assert d.miss_reason == "tools_changed"


def test_openai_chat_responses_and_openrouter() -> None:
    chat = parse_usage(
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1920},
            "completion_tokens_details": {"reasoning_tokens": 100},
        }
    )
    assert (chat.shape, chat.cache_read, chat.uncached_in, chat.reasoning) == ("openai_chat", 1920, 86, 100)
    new = parse_usage(
        {
            "input_tokens": 5000,
            "output_tokens": 10,
            "input_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1500},
        }
    )
    assert (new.shape, new.cache_write, new.uncached_in) == ("openai_responses", 1500, 500)
    router = parse_usage(
        {
            "prompt_tokens": 6131,
            "completion_tokens": 5,
            "cost": 0.0049,
            "prompt_tokens_details": {"cached_tokens": 4058, "audio_tokens": 0},
        }
    )
    assert (router.shape, router.cache_read, router.cost_usd) == ("openrouter", 4058, 0.0049)
    litellm = parse_usage(
        {
            "prompt_tokens": 100,
            "completion_tokens": 1,
            "cache_creation_input_tokens": 40,
            "prompt_tokens_details": {"cached_tokens": 50},
        }
    )
    assert (litellm.cache_write, litellm.uncached_in) == (40, 10)


def test_gemini_deepseek_bedrock() -> None:
    g = parse_usage(
        {
            "usageMetadata": {
                "promptTokenCount": 9000,
                "cachedContentTokenCount": 8192,
                "candidatesTokenCount": 20,
                "thoughtsTokenCount": 30,
            }
        }
    )
    assert (g.shape, g.cache_read, g.uncached_in, g.output, g.reasoning) == ("gemini", 8192, 808, 50, 30)
    snake = parse_usage({"prompt_token_count": 10, "cached_content_token_count": 0})
    assert snake.shape == "gemini"
    ds = parse_usage(
        {
            "prompt_tokens": 300,
            "prompt_cache_hit_tokens": 256,
            "prompt_cache_miss_tokens": 44,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 256},
        }
    )
    assert (ds.shape, ds.cache_read, ds.uncached_in) == ("deepseek", 256, 44)
    assert check_invariants(ds) == []
    bad = parse_usage(
        {
            "prompt_tokens": 300,
            "prompt_cache_hit_tokens": 256,
            "prompt_cache_miss_tokens": 44,
            "prompt_tokens_details": {"cached_tokens": 200},
        }
    )
    assert check_invariants(bad)
    br = parse_usage({"inputTokens": 5, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 7, "outputTokens": 2})
    assert (br.shape, br.total_in) == ("bedrock", 112)


def test_unknown_shape_names_where() -> None:
    assert detect_shape({"tokens": 5}) == "unknown"
    with pytest.raises(TranscriptError, match="msg 7: unrecognised usage shape"):
        parse_usage({"tokens": 5}, where="msg 7")
