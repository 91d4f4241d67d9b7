"""One targeted corruption per importer: the error names the file, the place and the field, on one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from contextlab.cli import main
from contextlab.errors import TranscriptError
from contextlab.transcripts import load_transcripts
from tests.transcripts.transcript_samples import SAMPLES, render

# (sample, path to the corrupted value, bad value, expected place, expected field or complaint)
CASES: list[tuple[str, tuple[Any, ...], Any, str, str]] = [
    ("claude-trace", (1, "response", "body", "usage", "input_tokens"), [1], "line 2, response", "usage.input_tokens"),
    ("claude-trace", (1, "request", "body", "messages", 0, "role"), 42, "line 2, message 0", "field 'role'"),
    ("anthropic-pairs", (0, "response", "usage", "input_tokens"), "lots", "line 1, response", "usage.input_tokens"),
    ("anthropic-pairs", (0, "response", "content", 1, "id"), [1], "line 1, response, block 1", "field 'id'"),
    ("openai-request-log", (1, "usage", "prompt_tokens"), -5, "line 2", "negative token count"),
    ("openai-request-log", (1, "messages", 0, "content"), 42, "line 2, message 0", "field 'content'"),
    ("codex", (7, "payload", "info", "last_token_usage", "input_tokens"), [1], "line 8", "input_tokens"),
    ("codex", (2, "payload", "role"), [1], "line 3", "field 'role'"),
    ("codex-legacy", (4, "call_id"), [1], "line 5", "field 'call_id'"),
    (
        "openhands",
        (3, "tool_call_metadata", "model_response", "choices", 0, "message", "content"),
        42,
        "model_response",
        "field 'content'",
    ),
    ("gemini-cli", ("messages", 1, "toolCalls", 0, "name"), 42, "message 1, toolCalls[0]", "'name'"),
    ("gemini-contents", (0, "role"), 42, "content 0", "field 'role'"),
    ("gemini-contents", (1, "parts"), "oops", "content 1", "field 'parts'"),  # not mistaken for another format
    ("gemini-contents", (1, "parts", 0), "oops", "content 1, part 0", "expected a part object"),
    ("hermes-session", ("messages", 2, "role"), [1], "message 3", "field 'role'"),
    ("langfuse", ("observations", 1, "input", 2, "content"), 42, "span 1, input[2]", "field 'content'"),
]


def _corrupt(name: str, path: tuple[Any, ...], bad: Any, folder: Path) -> Path:
    kind, value = SAMPLES[name]
    value = copy.deepcopy(value)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = bad
    target = folder / f"{name}.{kind}"
    target.write_text(render(kind, value) if kind == "json" or isinstance(value, list) else json.dumps(value))
    return target


@pytest.mark.parametrize(("name", "path", "bad", "place", "field"), CASES, ids=[f"{c[0]}:{c[1][-1]}" for c in CASES])
def test_the_error_names_file_place_and_field(
    name: str, path: tuple[Any, ...], bad: Any, place: str, field: str, tmp_path: Path
) -> None:
    target = _corrupt(name, path, bad, tmp_path)
    with pytest.raises(TranscriptError) as info:
        load_transcripts(target)
    message = str(info.value)
    assert message.startswith(f"{target}:") and "\n" not in message
    assert place in message and field in message


def test_the_cli_prints_it_as_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _corrupt("codex", (7, "payload", "info", "last_token_usage", "input_tokens"), "many", tmp_path)
    assert main(["inspect", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"contextlab: error: {target}:line 8")
