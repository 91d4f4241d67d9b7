"""The README's dataset table matches the committed datasets."""

from __future__ import annotations

import re
from pathlib import Path

from contextlab.datasets import describe, load_dataset

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_dataset_table_is_current() -> None:
    rows = re.findall(r"^\| `([a-z-]+)` \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|$", README.read_text(), re.MULTILINE)
    assert len(rows) == 3
    for name, requests, tokens, facts in rows:
        figures = describe(load_dataset(name))
        assert (figures["requests"], figures["tokens"], figures["facts"]) == (
            int(requests.replace(",", "")),
            int(tokens.replace(",", "")),
            int(facts.replace(",", "")),
        ), name
