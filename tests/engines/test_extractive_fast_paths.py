"""The extractive summarizer's fast paths give exactly what the plain per-word / per-line passes give."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.engines.summarizers import extractive
from contextlab.engines.tooltext import _ERROR_HINTS, _ERROR_LINE, first_error_line

PIECES = [
    *"ab/.:_-~ \t\n\r\x0b\x0c\x1c\x1f\x85\u2028\u3000(),*`'",
    "src/a.py",
    "./x/y.md",
    "~/z",
    "../up",
    "file.json,",
    "(a/b).",
    "v1.2.3",
    "http://a.b/c",
    "x.yml:",
    "A.PY",
    "a.pyc",
    "é/ü.py",
    "sk-proj-abcdefghijklmnopqrstu",
    "ghp_" + "a" * 22,
    "AKIA" + "B" * 16,
    "xoxb-1234567890ab",
    "Bearer " + "x" * 20,
    "api_key: 'abcdefgh'",
    "ſecret=abcdefgh",
    "token=",
    "-----BEGIN RSA PRIVATE KEY-----\nxx\n-----END RSA PRIVATE KEY-----",
    "ERROR",
    "error: x",
    "Traceback",
    "FAILED tests/a.py",
    "fatal: no",
    "error[E1]",
]


def _texts() -> list[str]:
    rng = random.Random(5)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40))) for _ in range(4000)]


def _plain_path_tokens(text: str) -> list[str]:
    found: list[str] = []
    for raw in text.split():
        if ("/" not in raw and "." not in raw) or "://" in raw:
            continue
        token = raw.strip(extractive._TOKEN_STRIP).rstrip(".")
        if token:
            found.extend(m.group(0).rstrip(".,;:") for m in extractive._PATH_TOKEN.finditer(token))
    return found


def _plain_errors(text: str) -> list[str]:
    if first_error_line(text) is None:
        return []
    return [found for line in text.splitlines() if (found := first_error_line(line[:2000]))]


def test_path_tokens_match_the_per_word_pass() -> None:
    for text in _texts():
        assert extractive.path_tokens(text) == _plain_path_tokens(text), text
        assert extractive.path_tokens(text) == _plain_path_tokens(text), text  # memoized words too


@settings(max_examples=2000, deadline=None)
@given(text=st.text(alphabet="ab/.py_-~ \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u3000cmdjsonxé", max_size=80))
def test_path_words_are_the_whole_word_patterns(text: str) -> None:
    """The ASCII fast path finds the words the whole-word pattern finds (ASCII whitespace of every
    kind, marks at word starts and ends, extensions followed by word characters or not)."""
    assert extractive._path_words(text) == extractive._PATH_WORD.findall(text)


def _errors_found(text: str) -> list[tuple[str, str]]:
    """(fingerprint, exemplar) of the error table the summarizer records for ``text``, in order."""
    errors: dict[str, extractive.Item] = {}
    extractive._collect_errors(text, 0, errors)
    return [(k, v.text) for k, v in errors.items()]


def _plain_error_table(text: str) -> list[tuple[str, str]]:
    expected: dict[str, str] = {}
    for found in _plain_errors(text):
        exemplar = extractive.one_line(found, 160)
        key = extractive.error_fingerprint(exemplar)
        expected.pop(key, None)
        expected[key] = exemplar
    return list(expected.items())


def test_error_lines_match_the_per_line_pass() -> None:
    for text in _texts():
        assert _errors_found(text) == _plain_error_table(text), text


def test_fast_paths_are_exercised() -> None:
    texts = _texts()
    assert sum(bool(_plain_path_tokens(t)) for t in texts) > 1000


# Error words (matching and near misses), every ASCII line break, and neighbours that move \b.
_ERROR_PIECES = st.sampled_from(
    [
        *"\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u2028 _a:[]()",
        "\r\n",
        "ERROR",
        "ERRORS",
        "xERROR",
        "FAILED",
        "FAILURE",
        "FAILx",
        "Traceback (most recent call last)",
        "Traceback",
        "ValueError:",
        "KeyException:",
        "Error:",
        "error:",
        "error[E0425]:",
        "error[",
        "fatal:",
        "afatal:",
        "PANIC",
        "CRITICAL",
        "Exception:",
        "é",
        "x" * 30,
        "x" * 700,
    ]
)


def _plain_first_error_line(text: str) -> str | None:
    match = _ERROR_LINE.search(text) if any(hint in text for hint in _ERROR_HINTS) else None
    if match is None:
        return None
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)].strip()


@settings(max_examples=3000, deadline=None)
@given(text=st.lists(_ERROR_PIECES, max_size=30).map("".join))
def test_error_lines_by_hint_search_are_the_regex_scan(text: str) -> None:
    """The first error line and every error line, found from the hints' positions, are what the
    regex scan of the whole text and the pass over every line find."""
    assert first_error_line(text) == _plain_first_error_line(text)
    assert _errors_found(text) == _plain_error_table(text)
