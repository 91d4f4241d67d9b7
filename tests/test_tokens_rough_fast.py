"""The regex fast path of ``estimate_tokens_rough`` equals the per-character definition."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from contextlab.tokens import _is_cjk, estimate_tokens_rough


def reference(text: str) -> int:
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    cjk = sum(1 for ch in text if _is_cjk(ord(ch)))
    rest = "".join(ch for ch in text if not _is_cjk(ord(ch)))
    return cjk + math.ceil(len(rest.encode("utf-8", "surrogatepass")) / 4)


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2A6FF)))
def test_matches_per_character_definition(text: str) -> None:
    assert estimate_tokens_rough(text) == reference(text)


def test_boundaries_of_every_range() -> None:
    for lo, hi in [
        (0x4E00, 0x9FFF),
        (0x3400, 0x4DBF),
        (0x20000, 0x2A6DF),
        (0xF900, 0xFAFF),
        (0x3040, 0x30FF),
        (0x31F0, 0x31FF),
        (0xAC00, 0xD7AF),
        (0x1100, 0x11FF),
        (0x3130, 0x318F),
    ]:
        for cp in (lo - 1, lo, hi, hi + 1):
            text = "é" + chr(cp)
            assert estimate_tokens_rough(text) == reference(text), hex(cp)
