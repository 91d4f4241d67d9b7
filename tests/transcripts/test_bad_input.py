"""Bad input: precise TranscriptErrors, warnings for recoverable oddities, and property-based fuzzing."""

from __future__ import annotations

import copy
import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextlab.cli import main
from contextlab.errors import TranscriptError
from contextlab.transcripts import TranscriptWarning, load_transcript, load_transcripts, save_transcript
from tests.transcripts.transcript_samples import SAMPLES, render


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_loads_and_round_trips(name: str, tmp_path: Path) -> None:
    kind, value = SAMPLES[name]
    path = tmp_path / f"sample.{kind}"
    path.write_text(render(kind, value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the samples are clean: no warning at all
        found = load_transcripts(path)
    assert found and all(t.messages for t in found)
    out = tmp_path / "native.jsonl.gz"
    save_transcript(found, out)
    assert load_transcripts(out) == found


@pytest.mark.parametrize(
    ("text", "where", "expected"),
    [
        ('{"messages": [\n{"role": "user", "content": "x"},\n{"role": }]}', ":line 3:", "invalid JSON"),
        ('{"messages": [{"role": "user", "content": "x"}', ":line 1:", "invalid JSON"),  # truncated
        ('{"role": "user", "content": "a"}\n{"role": "assistant", "cont', ":line 2:", "invalid JSON"),
        ('{"messages": [{"role": "wizard", "content": "x"}]}', ":message 0:", "unknown role 'wizard'"),
        (
            '{"messages": [{"role": "user", "content": 42}]}',
            ":message 0:",
            "expected a string, a list or null, got int",
        ),
        ('{"messages": [{"role": "tool", "content": "x"}]}', ":message 0:", "tool message needs a string id"),
        ('{"messages": "nope"}', ": ", "field 'messages': expected a list"),
        (
            '[{"role": "assistant", "tool_calls": [{"function": {"name": 3}}]}]',
            ":message 0:",
            "function.name",
        ),
        ("   \n", ": ", "empty file"),
    ],
)
def test_malformed_files_name_file_location_and_expectation(
    tmp_path: Path, text: str, where: str, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(TranscriptError) as info:
        load_transcripts(path)
    message = str(info.value)
    assert message.startswith(str(path)) and where in message + " " and expected in message


def test_truncated_gzip_and_bad_native_header(tmp_path: Path) -> None:
    kind, value = SAMPLES["openai"]
    path = tmp_path / "chat.json.gz"
    path.write_bytes(gzip.compress(render(kind, value).encode())[:-12])
    with pytest.raises(TranscriptError, match="truncated or corrupt gzip"):
        load_transcripts(path)
    native = tmp_path / "n.jsonl"
    native.write_text(
        '{"contextlab_transcript": 1, "facts": [{"fact_id": "f", "text": "t", "message_index": "3"}]}\n'
        '{"role": "user", "content": "x"}\n'
    )
    with pytest.raises(TranscriptError, match=r"line 1: bad header field: GoldFact.message_index: expected int"):
        load_transcripts(native)


def test_tool_result_without_call_is_warned_and_recorded(tmp_path: Path) -> None:
    path = tmp_path / "orphan.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a"},
                {"role": "tool", "tool_call_id": "ghost", "content": "r"},
            ]
        )
    )
    with pytest.warns(TranscriptWarning, match="orphan_tool_result"):
        t = load_transcript(path)
    assert t.metadata["structural_violations"] == ["message 2: orphan_tool_result: no tool call with id 'ghost'"]
    out = tmp_path / "orphan.jsonl"
    with pytest.warns(TranscriptWarning):
        save_transcript(t, out)
        assert load_transcript(out) == t  # the violation list survives conversion


def test_cli_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [{"role": "wizard"}]}')
    assert main(["convert", str(bad), str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("contextlab: error: ") and "unknown role 'wizard'" in err
    assert main(["convert", str(tmp_path / "missing.json"), str(tmp_path / "o.jsonl")]) == 2
    assert "file not found" in capsys.readouterr().err


# --------------------------------------------------------------------------- property-based

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "type",
                    "messages",
                    "id",
                    "message",
                    "tool_calls",
                    "function",
                    "from",
                    "value",
                    "conversations",
                    "usage",
                    "text",
                    "name",
                    "traj",
                    "history",
                    "request",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


def _load_or_error(path: Path) -> None:
    """Loading either works (and then survives conversion) or raises TranscriptError; nothing else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranscriptWarning)
        try:
            found = load_transcripts(path)
        except TranscriptError:
            return
        out = path.with_name("roundtrip.jsonl")
        save_transcript(found, out)
        assert load_transcripts(out) == found


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def _mutate(value: Any, path: tuple[Any, ...], action: str, replacement: Any) -> Any:
    if not path:
        return replacement if action != "delete" else None
    root = copy.deepcopy(value)
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if action == "delete":
        del parent[key]
    elif action == "wrap":
        parent[key] = [parent[key]]
    elif action == "stringify":
        parent[key] = json.dumps(parent[key])
    else:
        parent[key] = replacement
    return root


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_samples_never_crash(tmp_path: Path, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SAMPLES)))
    kind, value = SAMPLES[name]
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(value)
        path = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["delete", "replace", "wrap", "stringify"] if path else ["replace"]))
        value = _mutate(value, path, action, data.draw(JSON))
    text = render(kind, value) if kind == "json" or isinstance(value, list) else json.dumps(value)
    if data.draw(st.booleans()):
        text = text[: data.draw(st.integers(0, len(text)))]  # truncated file
    target = tmp_path / f"mutated.{kind}"
    target.write_text(text)
    _load_or_error(target)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON, as_lines=st.booleans(), raw=st.binary(max_size=64), use_raw=st.booleans())
def test_random_files_never_crash(tmp_path: Path, value: Any, as_lines: bool, raw: bytes, use_raw: bool) -> None:
    target = tmp_path / "random.json"
    if use_raw:
        target.write_bytes(raw)
    elif as_lines and isinstance(value, list):
        target.write_text("".join(json.dumps(v) + "\n" for v in value))
    else:
        target.write_text(json.dumps(value))
    _load_or_error(target)
