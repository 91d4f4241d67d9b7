"""Summary faithfulness for engine-written rows (engines.md §6 Q9), checked at each commit.

* **Unsupported identifiers**: identifiers in a summary that occur nowhere in what the engine was
  given (the history before the commit). A truncated identifier is still a substring of its source,
  so cutting a line short is not counted; ids an engine mints for its own store (``sum_<hex>``) are
  references, not claims, and are skipped.
* **Status upgrades**: a summary sentence that reports an identifier as done (passed, fixed,
  completed, ...) while every source line naming that identifier reports it as failing or unfinished.
  A done-sentence without an identifier cannot be checked and is counted as *undetermined*.

Text the engine adds to every summary whatever it summarises (the host's summary prefix names
``MEMORY.md``) is cut out first: it is a template, not a claim about the source.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, filterfalse
from operator import itemgetter, not_
from typing import Protocol

import ahocorasick_rs

from contextlab.engines.casefold import fold_to_ascii
from contextlab.measure.text import AsciiWords, identifier_parts, identifiers
from contextlab.messages import strip_surrogates

_ENGINE_ID = re.compile(r"^(?:sum|node|summary|leaf|msg)_[0-9a-f]{6,}$")
_DONE_WORDS = (
    *("pass", "passed", "passes", "passing", "fixed", "resolved", "complete", "completed", "done"),
    *("succeed", "succeeded", "succeeds", "success", "successful", "successfully", "merged", "works", "green"),
)
_NOT_DONE_WORDS = (
    *("fail", "failed", "fails", "failing", "failure", "error", "broken", "started", "in progress", "todo"),
    *("pending", "proposed", "not yet", "still", "red"),
)
"""Every word form that reports a step done, or not done (a whole word, in any case)."""


def _whole_words(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", re.I)


_DONE = _whole_words(_DONE_WORDS)
_NOT_DONE = _whole_words(_NOT_DONE_WORDS)
_STATUS_WORDS = AsciiWords([*_DONE_WORDS, *_NOT_DONE_WORDS])
"""Both word lists in one automaton, for folded lines (:func:`fold_to_ascii`): one pass finds every
candidate (a regular-expression search tries each alternative at each position, four times slower on
the lines of a session, and far slower on a long line that is not ASCII), and a candidate counts when
it is a whole word, as a word boundary would have it."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _word_character(character: str) -> bool:
    """Whether a regular expression's word class matches ``character`` (what a word boundary tells apart)."""
    return character.isalnum() or character == "_"


def _whole_word(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole word, as a regular expression's word boundary tells."""
    return not ((start and _word_character(text[start - 1])) or (end < len(text) and _word_character(text[end])))


def _status_of(line: str) -> tuple[bool, bool]:
    """Whether ``line`` says done, and whether it says not done (as ``_DONE`` and ``_NOT_DONE``
    would find: a status word, in any case, as a whole word)."""
    # The words are ASCII: in the folded line they occur exactly where re.I matches them in the
    # line, at the same positions, and a whole word is told by the line's own characters (re's
    # word boundary in Unicode text is str.isalnum or "_").
    folded = fold_to_ascii(line)
    done = not_done = False
    for word, start, end in _STATUS_WORDS.find_matches_as_indexes(folded, overlapping=True):
        if not _whole_word(line, start, end):
            continue  # part of a longer word
        if word < len(_DONE_WORDS):
            done = True
        else:
            not_done = True
        if done and not_done:
            break
    return done, not_done


def _done_names(sentence: str) -> list[str] | None:
    """The identifiers a sentence reports as done ([] for none named), or None if it reports nothing done."""
    done, not_done = _status_of(sentence)
    if not done or not_done:
        return None
    return [t for t in identifiers(sentence) if not _ENGINE_ID.match(t)]


@dataclass
class Faithfulness:
    """Findings for the summaries of one commit."""

    identifiers: int = 0
    unsupported: list[str] = field(default_factory=list)
    upgrades: list[str] = field(default_factory=list)
    undetermined: int = 0


@dataclass
class FaithfulnessMemo:
    """What one run's commits share: iterative summaries repeat most sentences, and the history
    they summarise keeps most lines, from one commit to the next.

    Attributes:
        verified: Identifiers found supported by an earlier commit (skips their search).
        sentences: Per summary sentence, the identifiers it reports done (None: not a done-sentence).
        summary_lines: Per summary line that holds a done word, its done-sentences.
        lines: Per source line, whether it says done and whether it says not done.
        rows: Per source row (its text), the identifiers already looked for in it, and for those
            it contains, ``(done, not done)`` over the lines naming them: a row is searched for
            an identifier once per run, however many commits it stays in the history for.
    """

    verified: set[str] = field(default_factory=set)
    sentences: dict[str, list[str] | None] = field(default_factory=dict)
    summary_lines: dict[str, _LineClaims] = field(default_factory=dict)
    lines: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    rows: dict[str, tuple[set[str], dict[str, tuple[bool, bool]]]] = field(default_factory=dict)


def without_template(summary: str, template: Sequence[str]) -> str:
    """``summary`` with every occurrence of the engine's fixed ``template`` texts cut out (longest
    first; each becomes a line break, so the text around it does not join into one token)."""
    for fixed in template:
        if fixed in summary:
            summary = summary.replace(fixed, "\n")
    return summary


class RowIndex(Protocol):
    """What a caller may already know about the source rows: which literal texts each contains."""

    def sole_owner(self, text: str) -> int | None:
        """A key standing for ``text`` (None: this index does not know the text)."""
        ...

    def scanned(self, payload: str) -> frozenset[int] | None:
        """The keys of the known texts in ``payload`` if it was scanned already (None: not yet)."""
        ...


def check_summaries(
    summaries: list[str],
    source: str | Sequence[str],
    verified: set[str] | None = None,
    memo: FaithfulnessMemo | None = None,
    template: Sequence[str] = (),
    index: RowIndex | None = None,
) -> Faithfulness:
    """Check engine-written ``summaries`` against ``source`` (the text the engine summarised: one
    string, or its rows, as if joined by line breaks).

    ``verified`` (or ``memo.verified``) holds identifiers found supported by an earlier commit of the
    same run; it is extended in place. ``template`` is text the engine adds to every summary
    whatever it summarises (:func:`contextlab.measure.template.template_texts`): it is no claim
    about the source, so it is cut out before checking. Identifiers hold no line break, so one
    occurs in the joined source exactly when it occurs in one of its rows, and each line lies
    within one row: giving the rows lets ``memo`` reuse what it found per row at earlier commits.
    ``index`` (the probe's scans of every payload it has seen) answers which rows hold the
    identifiers it knows without searching the rows again.
    """
    out = Faithfulness()
    shared = memo if memo is not None else FaithfulnessMemo()
    known = verified if verified is not None else shared.verified
    rows = [source] if isinstance(source, str) else list(dict.fromkeys(source))
    claimed: dict[str, None] = {}
    done_sentences: list[tuple[str, list[str]]] = []
    for summary in summaries:
        claims = _summary_claims(without_template(summary, template), shared)
        claimed.update(claims.identifiers)
        done_sentences += claims.done
        out.undetermined += claims.undetermined
    out.identifiers = len(claimed)
    unverified = [token for token in claimed if token not in known]
    if unverified:
        occurring = _occurring(unverified, rows, index)
        for token in unverified:
            if token in occurring:
                known.add(token)
            else:
                out.unsupported.append(token)
    named = {t for _sentence, names in done_sentences for t in names if t in known}
    if not named:
        return out
    status = _line_status(named, rows, shared, index)
    for sentence, tokens in done_sentences:
        checked = [status[t] for t in tokens if t in status]
        if checked and all(flags[1] and not flags[0] for flags in checked):
            out.upgrades.append(sentence)
    return out


def _keyed(tokens: Iterable[str], index: RowIndex) -> tuple[dict[int, str], list[str]]:
    """``tokens`` split by what ``index`` knows: key -> token for those it stands for by a key, and
    the others (in order), which only a search of the text finds."""
    by_key: dict[int, str] = {}
    rest: list[str] = []
    for token in tokens:
        key = index.sole_owner(token)
        if key is None:
            rest.append(token)
        else:
            by_key[key] = token
    return by_key, rest


def _occurring(tokens: list[str], rows: list[str], index: RowIndex | None) -> set[str]:
    """Which of ``tokens`` occur anywhere in ``rows`` (a truncated identifier still does). A token
    the index knows is in a row it has scanned exactly when the row's answer holds its key (set
    passes, no text read); the others, and every token in rows it has not scanned, are found by one
    automaton pass over the joined rows, not one substring search of them per token."""
    if index is None:
        return _searcher(tokens)("\n".join(rows))
    by_key, rest = _keyed(tokens, index)
    scans = list(map(index.scanned, rows))
    found: set[str] = set()
    if by_key:
        held: set[int] = set().union(*filter(None, scans))
        found.update(map(by_key.__getitem__, by_key.keys() & held))
    unscanned = [row for row, keys in zip(rows, scans, strict=True) if keys is None]
    if rest:
        found.update(_searcher(rest)("\n".join(rows)))
    unfound = [token for token in by_key.values() if token not in found]
    if unscanned and unfound:
        found.update(_searcher(unfound)("\n".join(unscanned)))
    return found


@dataclass(frozen=True, slots=True)
class _LineClaims:
    """What a summary (or one of its lines) claims."""

    identifiers: dict[str, None]
    """The identifiers it names (engine ids aside), in order of first occurrence."""
    done: list[tuple[str, list[str]]]
    """Its sentences that report named identifiers done: (the sentence, shortened; the names)."""
    undetermined: int
    """Its sentences that report something done without naming an identifier."""


def _summary_claims(summary: str, memo: FaithfulnessMemo) -> _LineClaims:
    """What ``summary`` claims: its identifiers (read from it whole, the backticked ones after those
    of its runs as :func:`identifiers` orders them) and the done-sentences of its lines that hold a
    done word (found by one automaton pass over the whole summary; what those lines claim is kept in
    ``memo``). An engine writes most lines of each summary anew (958 of 966 lines over a
    ``summary`` run's eight commits on a recorded session), so the summary is read in one pass, not
    line by line."""
    runs, backticked = identifier_parts(summary)
    found = {token: None for token in runs if not _ENGINE_ID.match(token)}
    for token in backticked:
        if not _ENGINE_ID.match(token):
            found.setdefault(token, None)
    known = memo.summary_lines
    done: list[tuple[str, list[str]]] = []
    undetermined = 0
    for line in _lines_saying_done(summary):
        claims = known.get(line)
        if claims is None:
            claims = known[line] = _done_claims(line, memo.sentences)
        done += claims.done
        undetermined += claims.undetermined
    return _LineClaims(found, done, undetermined)


def _lines_saying_done(text: str) -> list[str]:
    """The ``\\n``-lines of ``text`` (in order, a repeated line each time) that hold a done word as a
    whole word (``_status_of(line)[0]``): one pass of the status automaton over the folded text,
    each hit's line found by its position."""
    hits = [
        start
        for word, start, end in _STATUS_WORDS.find_matches_as_indexes(fold_to_ascii(text), overlapping=True)
        if word < len(_DONE_WORDS) and _whole_word(text, start, end)
    ]
    if not hits:
        return []
    lines = text.split("\n")
    ends = list(accumulate(map((1).__add__, map(len, lines))))  # each line's end, past its break
    return [lines[k] for k in sorted({bisect_right(ends, start) for start in hits})]


def _done_claims(line: str, sentences: dict[str, list[str] | None]) -> _LineClaims:
    """The done-sentences of one line that holds a done word (each sentence's names kept in
    ``sentences``): those naming identifiers, and how many name none (undetermined)."""
    done: list[tuple[str, list[str]]] = []
    undetermined = 0
    for sentence in _SENTENCE.split(line):  # some sentence may report something done
        if sentence in sentences:
            names = sentences[sentence]
        else:
            names = sentences[sentence] = _done_names(sentence)
        if names is None:
            continue
        if names:
            done.append((sentence.strip()[:200], names))
        else:
            undetermined += 1
    return _LineClaims({}, done, undetermined)


def _line_status(
    named: set[str], rows: Sequence[str], memo: FaithfulnessMemo, index: RowIndex | None = None
) -> dict[str, tuple[bool, bool]]:
    """For each of ``named`` that occurs in ``rows``: whether some line naming it says done, and
    whether some says not done (ORed over every line; a row is searched once per identifier)."""
    known = memo.rows
    for row in list(filterfalse(known.__contains__, rows)):
        known[row] = (set(), {})
    # Most rows were searched for every named identifier at an earlier commit: they are told from
    # the others at C level (a subset test each), and only the others are grouped for a search.
    entries = list(map(known.__getitem__, rows))
    searched = list(map(named.issubset, map(itemgetter(0), entries)))
    pending: dict[frozenset[str], list[tuple[str, set[str], dict[str, tuple[bool, bool]]]]] = {}
    for row, (checked, found) in compress(zip(rows, entries, strict=True), map(not_, searched)):
        pending.setdefault(frozenset(named - checked), []).append((row, checked, found))
    for missing, group in pending.items():
        # A row the index has scanned already holds the identifiers it knows exactly when its answer
        # holds their keys (one set intersection); the others, and every identifier in a row it has
        # not scanned, are found by one small automaton per group of rows missing the same ones
        # (a few dozen patterns scan several times faster than the index's automaton of every target).
        by_key, rest = _keyed(missing, index) if index is not None else ({}, list(missing))
        search_rest, search_all = _searcher(rest), _searcher(list(missing))
        for row, checked, found in group:
            keys = index.scanned(row) if index is not None else None
            if keys is None:
                present = search_all(row)
            else:
                present = {by_key[key] for key in by_key.keys() & keys}
                present.update(search_rest(row))
            for token in present:
                found[token] = _row_flags(row, token, memo.lines)
            checked |= missing
    status: dict[str, tuple[bool, bool]] = {}
    for found in filter(None, map(itemgetter(1), entries)):
        for token in found.keys() & named:
            flags = found[token]
            old = status.get(token)
            if old is None:
                status[token] = flags
            elif flags != old and old != (True, True):
                status[token] = (old[0] or flags[0], old[1] or flags[1])
    return status


def _searcher(tokens: list[str]) -> Callable[[str], set[str]]:
    """A function giving which of ``tokens`` occur in a row: substring tests for one or two, else
    one Aho-Corasick automaton (overlaps included), built on its first use."""
    if len(tokens) <= 2:
        return lambda row: {token for token in tokens if token in row}
    built: list[ahocorasick_rs.AhoCorasick] = []

    def search(row: str) -> set[str]:
        if not built:
            built.append(ahocorasick_rs.AhoCorasick(tokens, store_patterns=True))
        try:
            return set(built[0].find_matches_as_strings(row, overlapping=True))
        except UnicodeEncodeError:  # a lone surrogate (a row given as its own api_content): read as sent
            return set(built[0].find_matches_as_strings(strip_surrogates(row), overlapping=True))

    return search


def _row_flags(row: str, token: str, lines: dict[str, tuple[bool, bool]]) -> tuple[bool, bool]:
    """``(done, not done)`` over the lines of ``row`` that contain ``token`` (overlaps included)."""
    done = not_done = False
    at = row.find(token)
    while at >= 0:
        start = row.rfind("\n", 0, at) + 1
        stop = row.find("\n", at)
        line = row[start : stop if stop >= 0 else len(row)]
        flags = lines.get(line)
        if flags is None:
            flags = lines[line] = _status_of(line)
        done, not_done = done or flags[0], not_done or flags[1]
        if (done and not_done) or stop < 0:
            break
        # The next occurrence on a later line (every occurrence on this line has its flags).
        at = row.find(token, stop + 1)
    return done, not_done
