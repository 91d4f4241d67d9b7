"""Fixed text an engine adds to what it writes, which the faithfulness check must not read as claims.

Two sources: the host's own texts (``contextlab/data/hermes_texts.yaml``: summary prefixes, notes,
markers; every compressor-based engine writes them, and the current prefix names ``MEMORY.md`` and
``USER.md``), and whatever an engine declares in an optional ``template_texts`` attribute (a
sequence of strings, or a method returning one). Texts with ``{placeholders}`` contribute their
literal pieces of at least :data:`MIN_PIECE_CHARS` characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from contextlab.hermes_texts import parsed_file

MIN_PIECE_CHARS = 12
"""Shorter literal pieces (``" ["``, ``"tokens"``) would cut ordinary words out of summaries."""
_FIELD = re.compile(r"\{[^{}]*\}")


@cache
def host_texts() -> tuple[str, ...]:
    """Every fixed host text of ``hermes_texts.yaml`` (current and historical prefixes included)."""
    data = parsed_file()  # parsed once per process, with the compressor's texts (not a second time)
    texts = [str(e["text"]) for e in dict(data.get("texts") or {}).values() if isinstance(e, dict) and "text" in e]
    texts += [str(e["text"]) for e in data.get("historical_summary_prefixes") or [] if isinstance(e, dict)]
    return tuple(texts)


def template_texts(engine: Any = None) -> tuple[str, ...]:
    """The host's texts plus ``engine.template_texts`` (if declared), as literal pieces, longest first."""
    texts: list[str] = list(host_texts())
    declared = getattr(engine, "template_texts", None) if engine is not None else None
    if callable(declared):
        declared = declared()
    if isinstance(declared, Iterable) and not isinstance(declared, str | bytes):
        texts += [t for t in declared if isinstance(t, str)]
    pieces = {piece for text in texts for piece in _FIELD.split(text) if len(piece.strip()) >= MIN_PIECE_CHARS}
    return tuple(sorted(pieces, key=lambda p: (-len(p), p)))
