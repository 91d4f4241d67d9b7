"""The extractive summarizer's identifier patterns match exactly what their plain ``\\b`` forms match.

The shipped patterns open with a character set and a lookbehind instead of ``\\b`` so the regex engine
can skip to candidates (contextlab/engines/summarizers/extractive.py); these are the forms they replace.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.engines.summarizers.extractive import _HEX_RUN, _IDENTIFIER_PATTERNS, _has_hex_run

PLAIN = {
    1: re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    3: re.compile(r"\bv?\d+\.\d+\.\d+(?:[-.][0-9A-Za-z]+)*\b|\bv\d+\.\d+\b"),
    5: re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|sec|seconds|minutes|KB|MB|GB|TB|KiB|MiB|GiB|tokens|px|%)(?!\w)"),
}

# Hex digits, the version and size pieces, word and non-word neighbours (ASCII and not).
_TEXT = st.text(alphabet="0123456789abcdefgvx._- \n/%éAKMBmsptokenGi", max_size=120)


@pytest.mark.parametrize("index", sorted(PLAIN))
@settings(max_examples=1500, deadline=None)
@given(text=_TEXT)
def test_same_matches_as_the_plain_form(index: int, text: str) -> None:
    assert _IDENTIFIER_PATTERNS[index][2].findall(text) == PLAIN[index].findall(text)


@pytest.mark.parametrize(
    ("index", "text", "found"),
    [
        (1, "commit a881341 and 00893aaf, not deadbeefx or 12345678", ["a881341", "00893aaf"]),
        (1, "0123456789abcdef0123456789abcdef0123456789 is too long", []),
        (3, "v1.2.3 x1.2.3 1.2.3.4-rc1 v2.0 av2.0 _1.2.3 é1.2.3", ["v1.2.3", "1.2.3.4-rc1", "v2.0"]),
        (5, "took 12ms, 3 KB and 1.5 GB; a12ms is not one", ["12ms", "3 KB", "1.5 GB"]),
    ],
)
def test_examples(index: int, text: str, found: list[str]) -> None:
    assert _IDENTIFIER_PATTERNS[index][2].findall(text) == found == PLAIN[index].findall(text)


@settings(max_examples=1500, deadline=None)
@given(text=st.text(alphabet="0123456789abcdefgABCx \né\u0660", max_size=40))
def test_hex_gate_is_the_regex_gate(text: str) -> None:
    """The byte-translation gate says what ``[0-9a-f]{7}`` says (ASCII or not; Arabic-Indic digits
    are ``\\d`` but not hex)."""
    assert _has_hex_run(text) == (_HEX_RUN.search(text) is not None)
