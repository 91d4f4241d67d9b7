"""Secret redaction as the host does it (hermes-agent 0.19.0 ``redact_sensitive_text``): what each rule
masks, and the fast paths (keyword gates, line-initial passes, dotted keys tried before an ``=``,
prefix hits) against the plain whole-text passes. ``tests/hermes/test_real_host.py`` compares it
with the real function."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.redact import mask, redact, redact_uncached
from tests.engines.redaction_reference import CASES, PIECES, plain_redact


def _texts(n: int = 4000, longest: int = 30, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, longest))) for _ in range(n)]


def test_fast_paths_give_the_plain_passes() -> None:
    texts = _texts()
    for text in texts:
        assert redact_uncached(text) == plain_redact(text), text
        assert redact(text) == redact_uncached(text), text
    assert sum(redact(t) != t for t in texts) > 2000  # the pieces do make the rules match


@settings(max_examples=1500, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(
            [*"aAkKeEyYsSpPwWtToOnN_.-=:\n \t\"'&+@/0123456789", "\u0131", "\u017f", "\u212a", "\u0130"]
        ),
        max_size=60,
    )
)
def test_fast_paths_on_any_text_of_the_rule_characters(text: str) -> None:
    assert redact_uncached(text) == plain_redact(text)


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_each_rule_masks_what_the_host_masks(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_masks_keep_a_head_and_a_tail_of_long_values_only() -> None:
    assert mask("a" * 17) == "***"
    assert mask("abcdefghijklmnopqr") == "abcdef...opqr"
    assert mask("") == "***"


def test_a_long_line_of_dotted_names_is_not_searched_through() -> None:
    """The dotted-key pattern nests repeats: run over the 4,000 characters of dotted names before the
    one key on this line (no ``=`` follows them) it took 149 s; only the run before an ``=`` is tried."""
    names = "x.y." * 1000 + "secret zzzzzzzzzz"
    assert redact(f"{names} k.token=1") == f"{names} k.token=***"
