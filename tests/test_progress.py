"""The core install's progress bar: a text bar with a rate and an ETA, off when the environment says."""

from __future__ import annotations

import io

import pytest

from contextlab.progress import ReplayProgress, TextBar, format_seconds, progress_bar, progress_disabled


def test_text_bar_renders_share_rate_and_eta() -> None:
    bar = TextBar(50, "bench", unit="run", stream=io.StringIO(), force=True)
    bar.n = 20
    assert bar.render(10.0) == "bench  40% |████████            | 20/50 run  2.0 run/s  ETA 15s"
    bar.n = 50
    assert bar.render(25.0).endswith("50/50 run  2.0 run/s  25s")


def test_text_bar_draws_only_on_a_terminal() -> None:
    quiet, loud = io.StringIO(), io.StringIO()
    TextBar(3, "x", stream=quiet).update(3)
    forced = TextBar(3, "x", stream=loud, force=True)
    forced.update(3)
    forced.close()
    assert quiet.getvalue() == ""
    assert "3/3" in loud.getvalue() and loud.getvalue().endswith("\r")


def test_environment_turns_bars_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("CONTEXTLAB_NO_PROGRESS", raising=False)
    assert not progress_disabled()
    monkeypatch.setenv("CONTEXTLAB_NO_PROGRESS", "1")
    assert progress_disabled()
    assert type(progress_bar(10, "x")).__name__ == "_NoBar"
    assert type(progress_bar(10, "x", enabled=True)).__name__ != "_NoBar"


def test_format_seconds() -> None:
    assert [format_seconds(s) for s in (9.4, 125, 3720)] == ["9s", "2m05s", "1h02m"]


def test_replay_progress_counts_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlab
    import contextlab.progress as progress

    made: list[TextBar] = []

    def recording_bar(total: int, desc: str, *, unit: str = "it", enabled: bool | None = None) -> TextBar:
        bar = TextBar(total, desc, unit=unit, stream=io.StringIO(), force=True)
        made.append(bar)
        return bar

    monkeypatch.setattr(progress, "progress_bar", recording_bar)
    transcript = contextlab.load_dataset("coding-agent-short")
    result = contextlab.replay(transcript, "passthrough", observers=[ReplayProgress(enabled=True)], probes=False)
    plain = contextlab.replay(transcript, "passthrough", probes=False)
    assert list(result.trace.columns) == list(plain.trace.columns)  # adds no columns
    assert len(made) == 1 and made[0].total == transcript.n_requests
    assert made[0].n == result.summary["requests"] and made[0]._closed
