"""The generated datasets: reproducible to the byte, realistic in size, with usable gold facts."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from contextlab.cli import main
from contextlab.datasets import DATASETS, bundled_dataset_dir, dataset_path, describe, generate, write_dataset
from contextlab.messages import content_text, tool_call_arguments, tool_calls, validate_messages
from contextlab.transcripts import load_transcript
from contextlab.transcripts.model import Transcript

REPO = Path(__file__).resolve().parents[2]


@cache
def _generated(name: str) -> Transcript:
    return generate(name)


def _text(message: dict) -> str:
    return "\n".join([content_text(message), *(tool_call_arguments(c) for c in tool_calls(message))])


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_regeneration_is_byte_identical_to_the_committed_file(name: str, tmp_path: Path) -> None:
    committed = dataset_path(name)
    assert committed.exists(), f"run `contextlab datasets generate {name}` and commit {committed}"
    fresh = write_dataset(name, tmp_path)
    assert fresh.read_bytes() == committed.read_bytes()
    assert load_transcript(committed) == _generated(name)


def test_the_shipped_folder_is_found_by_package_name() -> None:
    # An editable install maps the contextlab_datasets package onto the checkout's datasets/ folder.
    assert bundled_dataset_dir() == REPO / "datasets"
    assert dataset_path("support-agent") == REPO / "datasets" / "support-agent.jsonl.gz"


def test_committed_files_stay_small() -> None:
    total = sum(dataset_path(name).stat().st_size for name in DATASETS)
    assert total < 3_000_000


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_dataset_is_structurally_valid_and_facts_are_literal(name: str) -> None:
    t = _generated(name)
    assert validate_messages(t.messages) == []
    assert t.tools and t.system_prompt and t.timestamps
    stamps = [t.timestamps[i] for i in range(len(t.messages))]
    assert stamps == sorted(stamps)
    assert {f.category for f in t.facts} == {"recall", "artifact", "continuation", "decision"}
    assert {t.messages[f.message_index]["role"] for f in t.facts} == {"user", "assistant", "tool"}
    uses = t.metadata["fact_uses"]
    for fact in t.facts:
        assert fact.text in _text(t.messages[fact.message_index])
        if fact.needed_later:
            assert uses[fact.fact_id] and min(uses[fact.fact_id]) > fact.message_index
            assert all(fact.text in _text(t.messages[i]) for i in uses[fact.fact_id])
        else:
            assert fact.fact_id not in uses
    assert len({f.fact_id for f in t.facts}) == len(t.facts)


def test_sizes_span_short_to_past_a_million_tokens() -> None:
    figures = {name: describe(_generated(name)) for name in DATASETS}
    assert 15 <= figures["coding-agent-short"]["requests"] <= 40
    assert figures["coding-agent"]["requests"] > 500
    assert figures["coding-agent"]["tokens"] > 1_000_000
    assert figures["support-agent"]["tokens"] > 200_000  # past a 128K and a 200K window
    t = _generated("coding-agent")
    depths = sorted(f.message_index / len(t.messages) for f in t.facts)
    assert depths[0] < 0.1 and depths[-1] > 0.8  # planted early, mid-way and late


def test_coding_agent_has_the_realistic_ingredients() -> None:
    t = _generated("coding-agent")
    names = {c["id"]: c["function"]["name"] for m in t.messages for c in tool_calls(m)}
    outputs = [m["content"] for m in t.messages if m["role"] == "tool"]
    kinds = Counter(names[m["tool_call_id"]] for m in t.messages if m["role"] == "tool")
    assert {"read_file", "search_files", "patch", "terminal", "write_file"} <= set(kinds)
    assert any(" FAILED [" in out and "short test summary info" in out for out in outputs)  # failing test runs
    assert any(out.count("\n") > 300 and " ERROR [" in out for out in outputs)  # long logs with error lines
    assert any(out.startswith("Applied 1 edit") and "\n@@ " in out for out in outputs)  # diffs
    repeated = Counter(
        (names[m["tool_call_id"]], m["content"]) for m in t.messages if m["role"] == "tool" and len(m["content"]) > 500
    )
    assert max(repeated.values()) >= 2  # identical calls with identical output


def test_cli_list_and_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "list"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in DATASETS)
    assert main(["datasets", "generate", "coding-agent-short", "--dir", str(tmp_path)]) == 0
    written = tmp_path / "coding-agent-short.jsonl.gz"
    assert written.read_bytes() == (REPO / "datasets" / "coding-agent-short.jsonl.gz").read_bytes()
    assert main(["datasets", "generate", "coding-agent-short", "--dir", str(tmp_path), "--check"]) == 0
    written.write_bytes(b"")
    assert main(["datasets", "generate", "coding-agent-short", "--dir", str(tmp_path), "--check"]) == 1
    capsys.readouterr()
    assert main(["datasets", "generate", "no-such-dataset"]) == 2
    assert capsys.readouterr().err.startswith("contextlab: error: unknown dataset 'no-such-dataset'")
