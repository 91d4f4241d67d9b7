"""A summarizer whose endpoint cannot be reached says so once (URL and error), and each compaction
it breaks carries the reason in the compactions frame, instead of a silent no-op."""

from __future__ import annotations

import socket
import warnings
from pathlib import Path

import pytest

pytest.importorskip("openai")

import contextlab
from contextlab.engines.summarizers.llm import SummarizerUnreachableWarning


def _closed_port() -> int:
    with socket.socket() as sock:  # bound then released: nothing listens there afterwards
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_endpoint_warns_once_and_fills_the_reason(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    options = {"base_url": url, "model": "m", "cache_dir": str(tmp_path), "mode": "live", "timeout_s": 5}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = contextlab.replay(
            contextlab.load_dataset("coding-agent-short"),
            "compressor",
            context_length=8_000,
            params={"summarizer": "llm", "summarizer_options": options},
        )
    said = [w for w in caught if issubclass(w.category, SummarizerUnreachableWarning)]
    assert len(said) == 1, [str(w.message) for w in said]
    assert url in str(said[0].message) and "APIConnectionError" in str(said[0].message)
    passes = result.compactions[result.compactions["trigger"] != "prune"]
    failed = passes[passes["reason"].fillna("").str.startswith("summarizer failed: network:")]
    assert len(failed) >= 1
    assert url in failed["reason"].iloc[0]
    assert (failed["outcome"] == "noop").all()  # network failures abort: the history is unchanged
