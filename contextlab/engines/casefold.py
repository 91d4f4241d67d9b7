"""Case-insensitive search of ASCII words in any text at ``str.find`` speed, position for position.

A case-insensitive ``re`` literal of an ASCII word matches a few non-ASCII characters too (dotted and
dotless I, long s, the Kelvin sign). :func:`fold_to_ascii` writes a text as lowered ASCII in which an
ASCII needle occurs exactly where such a literal matches in the text, at the same positions, so
searches (the ``lcm`` store's recall index, the faithfulness check's status words, the probe's decision
cues) need not run the regex engine over text that is not ASCII.
"""

from __future__ import annotations

import re
import string

ASCII_LOOKALIKES = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
"""The non-ASCII characters a case-insensitive ``re`` literal pairs with an ASCII letter, each with
that letter lowered (``tests/test_casefold.py`` checks every code point against ``re``)."""

_NON_ASCII = re.compile("[^\x00-\x7f]")
_LOWERED_WITH_MARKS_SWAPPED = bytes.maketrans(
    b"\x00?" + string.ascii_uppercase.encode(), b"?\x00" + string.ascii_lowercase.encode()
)
"""Bytes lowered, with NUL and ``?`` trading places (:func:`fold_to_ascii`)."""


def fold_to_ascii(text: str) -> str:
    """``text`` as lowered ASCII, position for position: each lookalike of an ASCII letter written
    as that letter, every other non-ASCII character as NUL. An ASCII needle without NUL occurs in it
    exactly where a case-insensitive ``re`` literal of the needle matches in ``text``."""
    if text.isascii():
        return text.lower()
    for character, letter in ASCII_LOOKALIKES:
        if character in text:
            text = text.replace(character, letter)
    if "\x00" in text:
        return _NON_ASCII.sub("\x00", text).lower()
    # At C speed (the regex substitution reads 200 MB/s): the ASCII codec writes each other
    # character as a `?`, so the text's own `?`s are NULs while it does, then the two trade back.
    marked = text.replace("?", "\x00").encode("ascii", "replace")
    return marked.translate(_LOWERED_WITH_MARKS_SWAPPED).decode("ascii")
