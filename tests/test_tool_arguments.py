"""Tool-call arguments as the host sends them: canonical JSON, or the repair of what does not parse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.tool_arguments import EMPTY_ARGUMENTS, repaired_arguments, sent_arguments

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@given(JSON_VALUES, st.sampled_from([None, (",", ":"), (", ", ": ")]), st.booleans())
def test_parsing_arguments_are_sent_sorted_compact_and_ascii(
    value: Any, separators: tuple[str, str] | None, ascii_only: bool
) -> None:
    recorded = json.dumps(value, separators=separators, ensure_ascii=ascii_only)
    sent = sent_arguments(recorded)
    assert sent == json.dumps(value, separators=(",", ":"), sort_keys=True)
    assert sent.isascii() and json.loads(sent) == value


@pytest.mark.parametrize(
    ("recorded", "sent"),
    [
        ("", "{}"),
        ("   ", "{}"),
        ("None", "{}"),
        ('{"cmd": "ls\n-la"}', '{"cmd":"ls\\n-la"}'),  # a literal line break in a string: escaped
        ('{"b": "x\ty", "a": 1}', '{"b":"x\\ty","a":1}'),  # that repair keeps the key order
        ('{"a": [1, 2,]}', '{"a": [1, 2]}'),  # trailing commas
        ('{"a": 1,}', '{"a": 1}'),
        ('{"path": "src/a.py"', '{"path": "src/a.py"}'),  # truncated: closed
        ('{"a": [{"b": 1}', '{"a": [{"b": 1}]}'),  # closed innermost first
        ('{"a": [{"b": 1}}', '{"a": [{"b": 1}]}'),  # a closer that skips an open bracket
        ('{"code": "}"', '{"code": "}"}'),  # a bracket inside a string is text
        ('{"a": 1}}}', '{"a": 1}'),  # excess closers trimmed
        ("[1, 2", "[1, 2]"),
        ('{"k": "tab\there", "z": [1,}', '{"k": "tab\\u0009here", "z": [1]}'),  # control escaped after repairs
        ('{"a": "never closed', "{}"),  # ends inside a string: not guessed
        ("not json", "{}"),
        ("{'a': 1}", "{}"),
    ],
)
def test_arguments_that_do_not_parse_are_repaired_as_the_host_repairs_them(recorded: str, sent: str) -> None:
    assert sent_arguments(recorded) == sent


@settings(max_examples=300)
@given(JSON_VALUES.filter(lambda v: isinstance(v, (dict, list))), st.data())
def test_a_cut_argument_string_becomes_json_or_empty(value: Any, data: st.DataObject) -> None:
    # A response cut at any point (the usual malformed arguments): the host always sends JSON.
    whole = json.dumps(value)
    cut = whole[: data.draw(st.integers(0, len(whole)))]
    json.loads(repaired_arguments(cut))  # parses (EMPTY_ARGUMENTS when nothing could be saved)


def test_deep_nesting_is_sent_empty_not_raised() -> None:
    assert sent_arguments("[" * 100_000) == EMPTY_ARGUMENTS
