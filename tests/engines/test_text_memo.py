"""The text memos and the gated scans behind them give exactly what the plain computations give."""

from __future__ import annotations

import random

import pytest

from contextlab import textmemo
from contextlab.engines import tooltext
from contextlab.engines.summarizers import extractive
from contextlab.redact import redact, redact_uncached
from contextlab.textmemo import TextMemo, clear_text_memos
from tests.engines.redaction_reference import plain_redact

PIECES = [
    *"ab/.:_-~ \t\n\r\x0b\x0c\x85\u2028\u3000(),*`'#%Σσ",
    "deadbeef1",
    "abc1234",
    "0123456789abcdef0123",
    "12 ms",
    "3.5GB",
    "7 seconds",
    "40%",
    "٣.٣",
    "v2.0",
    "1.2.3-rc.1",
    "#42",
    "&#12",
    "`x y`",
    "https://a.b/c?d=1",
    "src/a.py",
    "x.yml",
    "Bearer " + "x" * 20,
    "bEaReR " + "y" * 18,
    "api_key: 'abcdefgh'",
    "API-KEY=abcdefghij",
    "ſecret=abcdefgh",
    "Kelvin:K",
    "password = hunter22",
    "token=",
    "TOKEN: 123456789",
    "sk-ant-" + "z" * 20,
    "ghp_" + "a" * 22,
    "ERROR: boom 0x1f2e3d",
    "Traceback (most recent call last)",
    "exit code 2",
    "returncode=0",
    "FAILED tests/a.py::t - AssertionError: 3 != 4",
]


def _texts(n: int = 3000, longest: int = 40) -> list[str]:
    rng = random.Random(11)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, longest))) for _ in range(n)]


def _plain_identifiers(text: str) -> dict[str, int]:
    """Every occurrence recorded in turn, as the extractor did before it kept tokens per text."""
    found: dict[str, int] = {}
    if not text:
        return found
    for _needle, _gate, pattern in extractive._IDENTIFIER_PATTERNS:
        for match in pattern.finditer(text):
            token = match.group(0).rstrip(".,;:")
            if len(token) >= 2:
                found.pop(token, None)
                found[token] = 0
    for token in extractive.path_tokens(text):
        found.pop(token, None)
        found[token] = 0
    return found


def _plain_one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def test_identifier_tokens_match_recording_every_occurrence() -> None:
    texts = _texts()
    for text in texts:
        assert list(extractive.identifier_tokens(text)) == list(_plain_identifiers(text)), text
    for _needle, gate, pattern in extractive._IDENTIFIER_PATTERNS:  # each pattern (and gate) is exercised
        assert sum(pattern.search(t) is not None for t in texts) > 100, pattern.pattern
        if gate is not None:
            assert sum(bool(gate(t)) and pattern.search(t) is None for t in texts) > 20, gate


def test_identifiers_are_merged_across_texts_as_before() -> None:
    texts = _texts(200)
    found: dict[str, int] = {}
    expected: dict[str, int] = {}
    for idx, text in enumerate(texts):
        extractive._collect_identifiers(text, idx, found)
        extractive._collect_identifiers(text, idx, found)  # the memoized tokens the second time
        for token in _plain_identifiers(text):
            expected.pop(token, None)
            expected[token] = idx
    assert list(found.items()) == list(expected.items())


def test_gated_redaction_matches_every_pattern_run() -> None:
    texts = _texts()
    for text in texts:
        assert redact_uncached(text) == plain_redact(text), text
        assert redact(text) == plain_redact(text), text
    assert sum(redact(t) != t for t in texts) > 500


def test_one_line_on_long_texts_matches_collapsing_the_whole_text() -> None:
    rng = random.Random(3)
    for text in _texts(1500, 400):
        for limit in (0, 1, 3, 20, 100, rng.randint(0, 300)):
            assert tooltext.one_line(text, limit) == _plain_one_line(text, limit), (text, limit)
    spaced = " " * 5000 + "word " * 10
    assert tooltext.one_line(spaced, 20) == _plain_one_line(spaced, 20)


def test_result_outcome_and_error_lines_memos_match_the_plain_pass() -> None:
    for text in _texts():
        assert tooltext.result_outcome(text) == tooltext.result_outcome_uncached(text)
        assert extractive._ERRORS(text) == extractive.error_lines(text)


def test_a_full_memo_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def compute(text: str) -> int:
        calls.append(text)
        return len(text)

    memo = TextMemo(compute)
    monkeypatch.setattr(textmemo, "MAX_ENTRIES", 3)
    for text in ["a", "bb", "a", "ccc", "dddd", "a"]:
        assert memo(text) == len(text)
    assert calls == ["a", "bb", "ccc", "dddd", "a"]  # the fourth distinct text cleared the memo
    assert len(memo) == 2
    monkeypatch.setattr(textmemo, "MAX_CHARS", 5)
    memo.clear()
    memo("abc")
    memo("abcd")  # 3 + 4 characters > 5: starts over
    assert len(memo) == 1
    clear_text_memos()
    assert len(memo) == 0


def test_line_count_and_whole_text_error_line_match_the_plain_calls() -> None:
    breaks = ["\n", "\r", "\r\n", "\x0b", "\x1c", "\x85", "\u2028", "\u2029", "\x1f", "a", "b c", ""]
    rng = random.Random(5)
    texts = ["".join(rng.choices(breaks, k=rng.randint(0, 12))) for _ in range(3000)] + _texts(1000)
    for text in texts:
        assert tooltext.line_count(text) == len(text.splitlines()), repr(text)
        assert tooltext.error_line_of(text) == tooltext.first_error_line(text)
    assert sum("\n" in t and tooltext.line_count(t) > 1 for t in texts) > 500


def _plain_exit_code(text: str) -> int | None:
    head, tail = text[:2000], (text[-2000:] if len(text) > 2000 else "")
    for pattern in tooltext._EXIT_PATTERNS:
        match = pattern.search(head) or (pattern.search(tail) if tail else None)
        if match:
            return int(match.group(1))
    return None


def test_gated_exit_codes_match_every_pattern_run() -> None:
    pieces = ["EXIT code 3", "exited with 0", "Return code: 7", "returncode=1", '"exit_code": 2', "x", " ", "ı", "\n"]
    rng = random.Random(9)
    texts = [*_texts(2000), *("".join(rng.choices(pieces, k=rng.randint(0, 1500))) for _ in range(300))]
    for text in texts:
        assert tooltext.exit_code(text) == _plain_exit_code(text), text[:200]
    assert sum(tooltext.exit_code(t) is not None for t in texts) > 300
    assert sum(len(t) > 4000 for t in texts) > 50
