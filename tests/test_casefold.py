"""Folding text to ASCII where a case-insensitive re literal of an ASCII word would match."""

from __future__ import annotations

import re

from contextlab.engines.casefold import ASCII_LOOKALIKES, fold_to_ascii


def test_folding_pairs_each_code_point_with_the_ascii_letters_re_matches() -> None:
    """Every code point a case-insensitive ``re`` literal of an ASCII character matches is folded to
    that character lowered, and every other non-ASCII one to NUL, one character for one: so a folded
    text holds an ASCII needle exactly where ``re.IGNORECASE`` finds it (checked over all of Unicode,
    for the running Python's tables)."""
    any_ascii = re.compile("|".join(re.escape(chr(c)) for c in range(128)), re.IGNORECASE)
    paired: dict[str, str] = {}
    for code in range(0x80, 0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        character = chr(code)
        if any_ascii.fullmatch(character):
            letters = {chr(c).lower() for c in range(128) if re.fullmatch(re.escape(chr(c)), character, re.IGNORECASE)}
            assert len(letters) == 1, character
            paired[character] = letters.pop()
    assert paired == dict(ASCII_LOOKALIKES)
    every = "".join(chr(code) for code in range(0x80, 0x110000) if not 0xD800 <= code < 0xE000)
    assert fold_to_ascii(every) == "".join(paired.get(character, "\x00") for character in every)
    assert fold_to_ascii("Plain ASCII, KEPT") == "plain ascii, kept"
    assert fold_to_ascii("\u017ftate \u2192 \u0130nfo") == "state \x00 info"


def test_question_marks_nuls_and_lone_surrogates_keep_their_places() -> None:
    # The fast path trades `?` for NUL while the codec writes other characters as `?`; a text that
    # already holds a NUL takes the regex path.
    for text in ["a?\u00e9?", "??\u2192", "x\ud800?y", "\x00?\u00e9", "Wh\u0130ch? \u017fo \u212a?", "?\x00"]:
        assert fold_to_ascii(text) == "".join(
            dict(ASCII_LOOKALIKES).get(c, "\x00") if ord(c) > 127 else c.lower() for c in text
        ), text
