"""CLI tables fit 100 columns: text is cut with an ellipsis, then trailing columns are named and left out;
timestamps print as dates."""

from __future__ import annotations

import pandas as pd

from contextlab.cli.common import ellipsize, format_table


def test_long_text_is_cut_with_an_ellipsis() -> None:
    frame = pd.DataFrame({"name": ["mask_window"], "description": ["x" * 300]})
    out = format_table(frame)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert out.splitlines()[1].rstrip().endswith("…")


def test_wide_numeric_tables_leave_out_trailing_columns_and_say_so() -> None:
    frame = pd.DataFrame({f"column_number_{i}": [123456789] for i in range(12)})
    lines = format_table(frame).splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert lines[-1].startswith("(not shown to fit 100 columns: ") and "column_number_5," in lines[-1]


def test_timestamps_print_as_dates() -> None:
    frame = pd.DataFrame({"request": [1], "timestamp": [1_770_911_000.0]})
    assert "2026-02-12 15:43:20" in format_table(frame)
    when = pd.DataFrame({"at": pd.to_datetime(["2026-11-30 22:00"])})
    assert "2026-11-30 22:00" in format_table(when)


def test_ellipsize() -> None:
    assert ellipsize("abcdef", 4) == "abc…" and ellipsize("abc", 4) == "abc"
