"""A block's size as sent is its JSON text's, and its digest input names its value, without the text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.cache.sent_form import json_string_size, sent_form

# Every character class the JSON writer treats apart: quotes, backslashes, the five short escapes,
# other control characters, DEL, multi-byte characters, and long texts (the counting path).
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40) | st.text(
    alphabet='a"\\\n\r\t\b\f\x00\x01\x1f\x7fé€😀 ', min_size=500, max_size=2000
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _sent(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_string_size_is_the_json_literal_size(text: str) -> None:
    assert json_string_size(text.encode("utf-8")) == len(_sent(text))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.tuples(_TEXT, _TEXT).map(list), _JSON))
def test_size_is_the_json_text_size(value: Any) -> None:
    assert sent_form(value)[0] == len(_sent(value))


@settings(max_examples=300, deadline=None)
@given(st.tuples(_TEXT, _TEXT).map(list), st.tuples(_TEXT, _TEXT).map(list))
def test_tool_results_share_a_digest_input_only_when_equal(a: list[str], b: list[str]) -> None:
    assert (b"".join(sent_form(a)[1]) == b"".join(sent_form(b)[1])) == (a == b)


def test_an_id_cannot_absorb_the_content() -> None:
    # Without the id's length, ["ab", "c"] and ["a", "bc"] would hash the same bytes.
    assert b"".join(sent_form(["ab", "c"])[1]) != b"".join(sent_form(["a", "bc"])[1])
    assert b"".join(sent_form(["a", "b"])[1]) != b"".join(sent_form({"a": "b"})[1])
