"""The probe's incremental structures against the from-scratch computation they replace.

* Summary faithfulness keeps, per source row, what it found for each identifier at earlier commits;
  across commits whose history grows, shrinks (compaction) and carries earlier summaries, every
  result equals a check of the whole source joined into one text with no memo, and a naive
  line-by-line reading of the rule.
* A compaction diff classifies only the targets a commit touched or a new summary names; its
  tallies and items equal classifying every target of the previous request.
* ``compaction_items`` ranks dropped targets by their later uses with one vectorised search; it
  equals a per-item binary search over each target's uses.
"""

from __future__ import annotations

import bisect
import random
import re

import pandas as pd
import pytest

from contextlab import load_dataset, replay
from contextlab.host.observers import RequestView
from contextlab.measure import probe as probe_module
from contextlab.measure.faithfulness import (
    _DONE,
    _ENGINE_ID,
    _NOT_DONE,
    _SENTENCE,
    FaithfulnessMemo,
    _done_names,
    _status_of,
    check_summaries,
)
from contextlab.measure.probe import ITEM_COLUMNS, MeasureProbe, _diff_keys
from contextlab.measure.scan import RowScans, TextIndex
from contextlab.measure.text import identifiers, message_payload
from tests.measure.test_probe import SummarizingEngine

NAMES = ["src/app_1.py", "src/app_2.py", "lib/core.py", "build-4417", "v1.2.3", "cafe1234beef", "tests/test_x.py"]
STATUS = [
    "passed",
    "FAILED",
    "Started",
    "is Fixed",
    "still pending",
    "was merged",
    "looks fine",
    "has an error",
    "déjà PASSED",
]


def _line(rng: random.Random) -> str:
    words = [rng.choice(["the", "run", "of", "check", "and"]) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.7:
        words.insert(rng.randint(0, len(words)), rng.choice(NAMES))
    if rng.random() < 0.6:
        words.append(rng.choice(STATUS))
    if rng.random() < 0.2:
        words.append(rng.choice(NAMES)[:-2])  # a truncated identifier
    return " ".join(words)


def _row(rng: random.Random) -> str:
    return "\n".join(_line(rng) for _ in range(rng.randint(1, 4)))


def _summary(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(1, 5)):
        name = rng.choice([*NAMES, "src/app_9.py", "unknown-7781"])  # some never in any source
        if rng.random() < 0.2:
            name = f"`{rng.choice([name, 'ContextEngine', 'getUser'])}`"  # the last two: backticked only
        sentences.append(f"{name} {rng.choice(STATUS)}.")
    if rng.random() < 0.3:
        sentences.append("All tests passed.")
    if rng.random() < 0.2:
        # A URL is completed from its first occurrence in the whole summary, which may be another line.
        url = "at https://ci.example/build-4417 ok. Was xhttps://ci.example/build-4417?run=2 done"
        sentences.append(rng.choice(["See `sum_0a1b2c3d`.", "Ref `build-4417` done", *url.split(". ")]))
    # Iterative summaries are written in lines (read line by line, from a memo): some breaks inside
    # a sentence's spacing, blank lines, trailing spaces.
    separators = [" ", " ", "\n", ".\n\n", " \n  ", "\r\n"]
    return "".join(f"{sentence}{rng.choice(separators)}" for sentence in sentences).rstrip(" ")


def _naive(summaries: list[str], source: str, verified: set[str]) -> tuple[int, list[str], list[str], int]:
    """The rule read literally: claimed identifiers, substring support, status over whole lines."""
    claimed = list(dict.fromkeys(t for s in summaries for t in identifiers(s) if not _ENGINE_ID.match(t)))
    unsupported = []
    for token in claimed:
        if token not in verified:
            if token in source:
                verified.add(token)
            else:
                unsupported.append(token)
    upgrades, undetermined = [], 0
    lines = source.split("\n")
    for summary in summaries:
        for sentence in _SENTENCE.split(summary):
            names = _done_names(sentence)
            if names is None:
                continue
            if not names:
                undetermined += 1
                continue
            flags = []
            for name in names:
                if name not in verified:
                    continue
                naming = [line for line in lines if name in line]
                if naming:
                    flags.append((any(_DONE.search(x) for x in naming), any(_NOT_DONE.search(x) for x in naming)))
            if flags and all(not_done and not done for done, not_done in flags):
                upgrades.append(sentence.strip()[:200])
    return len(claimed), unsupported, upgrades, undetermined


# The status rule as first written (kept here as the reference the word lists must equal).
_DONE_RULE = re.compile(
    r"\b(?:pass(?:ed|es|ing)?|fixed|resolved|completed?|done|succeed(?:ed|s)?|success(?:ful(?:ly)?)?|merged|works|green)\b",
    re.I,
)
_NOT_DONE_RULE = re.compile(
    r"\b(?:fail(?:ed|s|ing|ure)?|error|broken|started|in progress|todo|pending|proposed|not yet|still|red)\b", re.I
)
_PIECES = [
    *("pass", "passed", "PASSES", "passing", "passe", "xpass", "pass1", "pass_", "-passed-", "Fixed", "completes"),
    *("successfully", "successes", "works", "worksheet", "green", "greenish", "done.", "(done)", "undone"),
    *("fail", "FAILURE", "failings", "error", "errors", "error:", "red", "redo", "Red.", "in progress", "in  progress"),
    *("not yet", "notyet", "still", "stills", "todo", "TODO:", "pending", "café", "naïve done", "déjà vu"),
    *(" ", " ", " ", "_", "-", ".", "/", "1", "\t"),
    # Non-ASCII letters that re.I pairs with ASCII ones (long s, dotted and dotless I, Kelvin sign),
    # other letters and marks beside a word (a word boundary is Unicode's there), superscript two.
    *(
        "\u017ftill",
        "pa\u017f\u017fed",
        "\u0130n progress",
        "st\u0131ll",
        "\u212a",
        "\u2192",
        "\u2713",
        "\u00e9",
        "\u00b2",
    ),
]


def test_status_words_say_what_the_written_rule_says() -> None:
    rng = random.Random(7)
    for _ in range(4000):
        line = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6)))
        want = (bool(_DONE_RULE.search(line)), bool(_NOT_DONE_RULE.search(line)))
        assert _status_of(line) == want, line
        assert (bool(_DONE.search(line)), bool(_NOT_DONE.search(line))) == want, line


def test_a_url_is_read_from_its_first_occurrence_in_the_whole_summary() -> None:
    # Read line by line, the second line would claim the URL the source holds; the summary as a whole
    # completes it from its first occurrence, on the first line, as identifiers() does.
    summary = "Was xhttps://ci.example/b-4417?run=2 seen\nThe https://ci.example/b-4417 run passed."
    source = "The https://ci.example/b-4417 run started"
    assert identifiers(summary) == ["https://ci.example/b-4417?run=2"]
    assert check_summaries([summary], [source], memo=FaithfulnessMemo()).unsupported == [
        "https://ci.example/b-4417?run=2"
    ]


def test_faithfulness_by_rows_equals_the_joined_source_as_history_grows_and_shrinks() -> None:
    seen = {"upgrades": 0, "unsupported": 0, "clean": 0}
    for seed in range(40):
        rng = random.Random(seed)
        memo, indexed = FaithfulnessMemo(), FaithfulnessMemo()
        # An index of row scans that knows some of the identifiers (as the probe's scans know the
        # transcript's): those are looked up in its answer for a row it has scanned, the others and
        # every identifier of a row it has not scanned searched.
        known = NAMES[: 2 + seed % 5]
        index = RowScans(TextIndex(known), [[name] for name in known], [])
        history = [_row(rng) for _ in range(rng.randint(1, 6))]
        for _commit in range(8):
            appended = [_row(rng) for _ in range(rng.randint(0, 4))]
            summaries = [_summary(rng) for _ in range(rng.randint(1, 2))]
            source = history + appended
            verified = set(memo.verified)
            scratch = check_summaries(summaries, "\n".join(source), memo=FaithfulnessMemo(verified=set(verified)))
            naive = _naive(summaries, "\n".join(source), set(verified))
            found = check_summaries(summaries, source, memo=memo)
            got = (found.identifiers, found.unsupported, found.upgrades, found.undetermined)
            assert got == (scratch.identifiers, scratch.unsupported, scratch.upgrades, scratch.undetermined), seed
            assert got == naive, seed
            for row in source:  # the probe has scanned the rows it sent, not those it has not
                if rng.random() < 0.5:
                    index.find(row)
            via = check_summaries(summaries, source, memo=indexed, index=index)
            assert (via.identifiers, via.unsupported, via.upgrades, via.undetermined) == got, seed
            seen["upgrades"] += len(found.upgrades)
            seen["unsupported"] += len(found.unsupported)
            seen["clean"] += not found.upgrades
            # The commit: some rows dropped (a compaction), the summaries become rows, a row may repeat.
            kept = [row for row in source if rng.random() < 0.6]
            history = [*summaries, *kept, *(kept[:1] if kept and rng.random() < 0.3 else [])]
        assert any(memo.rows.values()), seed
    assert all(seen.values()), seen  # every outcome occurs, so the comparison means something


class KeptProbe(MeasureProbe):
    """The probe itself as the run's observer (not a clone), so the test can read its state."""

    def clone(self) -> KeptProbe:
        return self


def item_tuples(probe: MeasureProbe) -> list[tuple[int, int, str, int]]:
    """The probe's items as ``(request, target, outcome, transcript index)``, in item order."""
    return [
        (request, target, "removed" if lost else "summarised", ti)
        for request, chosen, gone, ti in probe._items
        for target, lost in zip(chosen.tolist(), gone.tolist(), strict=True)
    ]


def expected_row(probe: MeasureProbe, item: tuple[int, int, str, int]) -> tuple[object, ...]:
    """An item's labels, read off its target."""
    request, target, outcome, _ti = item
    x = probe._targets[target]
    return (request, x.kind, x.key, x.texts[0][:160], x.category, x.origin, outcome)


def test_compaction_items_rank_by_a_search_over_each_targets_uses() -> None:
    for name, engine, window in (
        ("support-agent", "compressor", 64_000),
        ("coding-agent-short", SummarizingEngine(threshold_tokens=6000, keep=3), 16_000),
    ):
        probe = KeptProbe()
        replay(load_dataset(name), engine, context_length=window, probes=False, observers=[probe])
        items = item_tuples(probe)
        assert len(items) > 5
        columns, _order = probe._item_columns()
        for n, (request, target, outcome, ti) in enumerate(items):
            uses = probe._uses(target)
            later = uses[bisect.bisect_left(uses, ti) :]
            expected = expected_row(probe, (request, target, outcome, ti))
            assert tuple(columns[c][n] for c in ITEM_COLUMNS[:7]) == expected
            assert columns["needed_later"][n] == bool(later) and columns["later_uses"][n] == len(later)
            next_use = columns["next_use"][n]
            assert (next_use == later[0]) if later else (next_use is None or next_use != next_use)
        assert columns["needed_later"].any() and not columns["needed_later"].all()
        # The ranked frame is what a stable pandas sort of the rows in item order gives.
        plain = pd.DataFrame(
            [(*expected_row(probe, item), *(columns[c][n] for c in ITEM_COLUMNS[7:])) for n, item in enumerate(items)],
            columns=ITEM_COLUMNS,
        )
        expected_frame = plain.sort_values(
            ["request", "needed_later", "later_uses", "kind", "key"],
            ascending=[True, False, False, True, True],
            kind="stable",
            ignore_index=True,
        )
        pd.testing.assert_frame_equal(probe.frames()["compaction_items"], expected_frame, check_exact=True)


class CheckedDiffProbe(KeptProbe):
    """Classifies every target of the previous request at each commit, as the diff did before it
    looked only at the touched ones, and compares the tallies and items."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0

    def _summary_targets(self, summary_texts: list[str]) -> set[int]:
        self.in_summary = super()._summary_targets(summary_texts)
        return self.in_summary

    def _on_commit(self, view: RequestView, touched: dict[int, bool]) -> None:
        held = {t for found in self._previous_found for t in found}
        before_present = sorted(t for t in held if self._targets[t].message_index < self._previous_index)
        items = len(item_tuples(self))
        super()._on_commit(view, touched)
        counts, tallies, expected_items = self._counts, dict.fromkeys(_diff_keys(), 0), []
        for t in before_present:
            if counts[t] > 0 and not (t in self.in_summary and counts[t] <= 1):
                outcome = "kept"
            else:
                outcome = "summarised" if counts[t] > 0 else "removed"
                expected_items.append((view.request, t, outcome, view.transcript_index))
            tallies[f"{self._targets[t].kind}_{outcome}"] += 1
        assert {k: self._diff_rows[-1][k] for k in tallies} == tallies
        assert item_tuples(self)[items:] == expected_items
        self.checked += 1


def test_compaction_diff_tallies_equal_classifying_every_target_of_the_previous_request() -> None:
    for name, engine, window in (
        ("support-agent", "compressor", 64_000),
        ("support-agent", "lcm", 64_000),
        ("coding-agent-short", SummarizingEngine(threshold_tokens=6000, keep=3), 16_000),
    ):
        probe = CheckedDiffProbe()
        replay(load_dataset(name), engine, context_length=window, probes=False, observers=[probe])
        assert probe.checked >= 1, (name, engine)
        assert any(row["identifier_kept"] and row["identifier_removed"] for row in probe._diff_rows)


@pytest.mark.parametrize("vector_flips", [1, 10**9], ids=["group-sums-in-numpy", "group-sums-one-by-one"])
def test_target_counts_follow_rows_that_move_repeat_leave_and_come_back(
    vector_flips: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe carries each target's count from one request to the next by the rows that left and
    came (compared as multisets of row objects, summed in numpy when many change): after every
    request each count equals the number of the request's rows that hold the target, and the group
    presence sums match the counts, whatever the rows did (moved, repeated, dropped, brought back),
    whether the groups of the targets that changed move one by one or summed in numpy."""
    monkeypatch.setattr(probe_module, "_VECTOR_FLIPS", vector_flips)
    transcript = load_dataset("coding-agent-short")
    probe = MeasureProbe()
    probe.bind(transcript)
    pool = [dict(m) for m in transcript.messages]  # fixed row objects, each one's targets fixed
    rng = random.Random(7)
    history: list[dict[str, object]] = []
    previous: list[dict[str, object]] = []
    for request in range(120):
        size = rng.randint(1, 60)
        rows = [rng.choice(pool) for _ in range(size)]
        if rng.random() < 0.3 and previous:
            rows = previous[: rng.randint(0, len(previous))] + rows  # a shared prefix, then changes
        if rng.random() < 0.2:
            rows += rows[: rng.randint(0, len(rows))]  # the same objects twice
        keep = 0
        while keep < min(len(rows), len(previous)) and rows[keep] is previous[keep]:
            keep += 1
        history = history or rows
        view = RequestView(
            turn=request,
            request=request,
            timestamp=float(request),
            messages=rows,
            tools=[],
            message_tokens=[1] * len(rows),
            tools_tokens=0,
            fixed_overhead_tokens=0,
            prompt_tokens=len(rows),
            history=history,
            transcript_index=min(len(transcript.messages) - 1, 2 * request),
            prefix_messages=rng.randint(0, keep),  # a host may report less than is shared
        )
        probe.observe(view)
        expected = [0] * len(probe._counts)
        for row in rows:
            for t in probe._scan_text(message_payload(row)):
                expected[t] += 1
        assert probe._counts == expected, f"request {request}"
        present = [0] * len(probe._present_n)
        for t, count in enumerate(expected):
            if count and probe._eligible[t]:
                for g in probe._groups_of[t]:
                    present[g] += 1
        assert list(probe._present_n) == present, f"request {request}"
        previous = rows
