"""The transcript formats as two ordered registries of readers: whole JSON documents and JSON Lines rows.

:func:`contextlab.transcripts.load_transcripts` tries each registry's readers in registration order
and loads with the first that recognises the content; the order matters (the more specific shapes
come first, OpenAI chat, the loosest, last). A reader registered later (``DOCUMENT_READERS.register``)
is tried after the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextlab.registry import Registry
from contextlab.transcripts import (
    anthropic,
    claude_code,
    codex,
    gemini,
    hermes,
    mini_swe_agent,
    native,
    openai_chat,
    openhands,
    otel,
    proxy_log,
    sharegpt,
    swe_agent,
    tau_bench,
)
from contextlab.transcripts.model import Transcript

Rows = list[tuple[int, Any]]


@dataclass(frozen=True)
class Reader:
    """How one format is recognised and read: ``looks_like(content)``, then ``load(path, content)``.

    ``content`` is the parsed JSON document, or the ``(line number, value)`` rows of a JSON Lines file.
    """

    looks_like: Callable[[Any], bool]
    load: Callable[[Path, Any], list[Transcript]]


def _one_row(reader: Callable[[Rows], bool]) -> Callable[[Any], bool]:
    return lambda document: reader([(1, document)])


def _as_rows(loader: Callable[[Path, Rows], list[Transcript]]) -> Callable[[Path, Any], list[Transcript]]:
    return lambda path, document: loader(path, [(1, document)])


DOCUMENT_READERS: Registry[Reader] = Registry("transcript format")
"""Readers of a file holding one JSON document, tried in this order."""
for _name, _reader in (
    ("contextlab", Reader(native.is_native, _as_rows(native.load))),  # a native file: one transcript, no messages
    ("claude-code", Reader(_one_row(claude_code.looks_like), _as_rows(claude_code.load))),  # a one-line session log
    ("codex-rollout-line", Reader(_one_row(codex.looks_like_rows), _as_rows(codex.load_rows))),  # a one-line rollout
    ("tau-bench", Reader(tau_bench.looks_like, tau_bench.load)),
    ("mini-swe-agent", Reader(mini_swe_agent.looks_like, mini_swe_agent.load)),
    ("codex", Reader(codex.looks_like, codex.load)),
    ("openhands", Reader(openhands.looks_like, openhands.load)),
    ("swe-agent", Reader(swe_agent.looks_like, swe_agent.load)),
    ("gemini-cli", Reader(gemini.looks_like, gemini.load)),
    ("sharegpt", Reader(sharegpt.looks_like, sharegpt.load)),
    ("claude-trace", Reader(proxy_log.looks_like, proxy_log.load)),
    ("anthropic", Reader(anthropic.looks_like, anthropic.load)),
    ("hermes", Reader(hermes.looks_like_session, hermes.load_session)),
    ("otel", Reader(otel.looks_like, otel.load)),
    ("openai", Reader(openai_chat.looks_like, openai_chat.load_json)),
):
    DOCUMENT_READERS.register(_name, _reader, source="builtin")

ROW_READERS: Registry[Reader] = Registry("transcript format")
"""Readers of a JSON Lines file (its ``(line, value)`` rows), tried in this order."""
for _name, _reader in (
    ("contextlab", Reader(lambda rows: native.is_native(rows[0][1]), native.load)),
    ("claude-code", Reader(claude_code.looks_like, claude_code.load)),
    ("codex", Reader(codex.looks_like_rows, codex.load_rows)),
    ("claude-trace", Reader(proxy_log.looks_like_rows, proxy_log.load_rows)),
    ("sharegpt", Reader(sharegpt.looks_like_rows, sharegpt.load_rows)),
    ("openhands", Reader(openhands.looks_like_rows, openhands.load_rows)),
    ("anthropic", Reader(anthropic.looks_like_rows, anthropic.load_rows)),
    ("otel", Reader(otel.looks_like_rows, otel.load_rows)),
    ("openai", Reader(openai_chat.looks_like_rows, openai_chat.load_jsonl)),
):
    ROW_READERS.register(_name, _reader, source="builtin")


def first_reader(readers: Registry[Reader], content: Any) -> Reader | None:
    """The first reader (in registration order) that recognises ``content``, or None."""
    for name in readers:
        reader = readers.lookup(name)
        if reader.looks_like(content):
            return reader
    return None
