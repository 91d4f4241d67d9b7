"""The mechanical extractors and the oracle's search key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.measure.recovery import fact_key
from contextlab.measure.text import (
    constraint_sentences,
    decision_sentences,
    error_fingerprint,
    error_lines,
    identifiers,
    task_text,
)
from contextlab.messages import content_text, wire_message, without_surrogates
from contextlab.transcripts import load_transcript


def test_identifiers_find_each_shape_once_in_order() -> None:
    text = (
        "see https://x.org/a/b?c=1 and src/foo/bar.py, v1.2.3 deadbeef1 #1234 ORB-E-9327 `make_test` "
        "and src/foo/bar.py again"
    )
    assert identifiers(text) == [
        "https://x.org/a/b?c=1",
        "src/foo/bar.py",
        "v1.2.3",
        "deadbeef1",
        "#1234",
        "ORB-E-9327",
        "make_test",
    ]


def test_plain_words_and_short_tokens_are_not_identifiers() -> None:
    assert identifiers("the quick brown fox a.py #12 ok") == []
    # Backticks around a plain word (any case) do not make it an anchor; a name with a capital
    # inside, an underscore, a dot or a digit is one.
    text = "set `state`, `Source` and `README`, then `getUser`, `ContextEngine`, `max_tokens`, `Makefile.am`"
    assert identifiers(text) == ["getUser", "ContextEngine", "max_tokens", "Makefile.am"]


def test_record_ids_codes_dates_and_uuids_are_identifiers() -> None:
    # The shapes a customer-service or API session quotes back (tau-bench: booking references,
    # flight numbers, user ids, dates), and request ids.
    text = (
        '{"reservation_id": "OI5L9G", "user_id": "sofia_kim_7287", "flight_number": "HAT084", '
        '"date": "2024-05-27", "ref": "4BMN53"} request 258c7280-AE70-4798-800f-63464d01a85d on x86_64'
    )
    assert identifiers(text) == [
        "OI5L9G",
        "sofia_kim_7287",
        "HAT084",
        "2024-05-27",
        "4BMN53",
        "258c7280-AE70-4798-800f-63464d01a85d",
        "x86_64",
    ]
    # Counts, words, acronyms, dunder names and names without a digit are not.
    assert identifiers("ERROR 12345 HTTPS AQLBTL __init__ user_id _p2345 2024-05-27T10:00:00Z") == []
    # The ASCII fast path and the scan of a non-ASCII text agree on every new shape.
    assert identifiers(text + " é") == identifiers(text)


def test_error_fingerprints_mask_numbers_hex_and_case() -> None:
    a = error_fingerprint("ERROR: shard 42 offline at 0xdeadbeef")
    b = error_fingerprint("error: shard 7 offline at 0x00ffee12")
    assert a == b == "error: shard <n> offline at <hex>"
    lines = list(error_lines("ok\nERROR: shard 42 offline\nall good\nTraceback (most recent call last):"))
    assert [f for f, _ in lines] == ["error: shard <n> offline", "traceback (most recent call last):"]


def test_constraint_sentences_tag_corrections() -> None:
    found = dict(
        constraint_sentences("Please fix the login bug. Never touch the prod database.\nNo, that's wrong file")
    )
    assert found == {"Never touch the prod database.": "instruction", "No, that's wrong file": "correction"}
    assert task_text("\n\n  Fix the flaky test in ci  \nmore") == "Fix the flaky test in ci"


def test_statements_that_hold_a_cue_word_are_not_instructions() -> None:
    statements = (
        "I don't remember the reservation ID, sorry. I still don't have my user ID with me. "
        "I must have left it somewhere else. I'll make sure to find it first. "
        "I've always had great experiences with you. I'm the only passenger on it. "
        "I should be eligible for a full refund, right? How should we proceed if that is the case?\n"
        "No, that's all for now."
    )
    assert list(constraint_sentences(statements)) == []
    rules = (
        "I don't want to fly before 11 AM. Don't touch the migrations. Could you please make sure the tests pass? "
        "This should be changed to return a dict. I don't remember the ID, but never force-push to main."
    )
    assert [s for s, kind in constraint_sentences(rules) if kind == "instruction"] == [
        "I don't want to fly before 11 AM.",
        "Don't touch the migrations.",
        "Could you please make sure the tests pass?",
        "This should be changed to return a dict.",
        "I don't remember the ID, but never force-push to main.",
    ]


def test_fact_key_prefers_an_identifier_then_long_words() -> None:
    assert fact_key("the deploy key is KEY-7781") == ("KEY\\-7781", "regex")
    assert fact_key("add retry with backoff") == ("backoff retry with", "fts")


def test_the_fast_ascii_path_equals_the_regex_scan() -> None:
    # identifiers() splits ASCII text without URLs on bytes; the regex scan handles the rest.
    from contextlab.measure.text import _ascii_identifiers, _scanned_identifiers, forget_identifiers

    texts = [
        "run pytest tests/unit/test_x.py::test_y -k v2.0.1 (see PROJ-12a3) and ./scripts/run.sh.",
        "hash=deadbeef1234, ref #4521; path a/b/c/d, words-only and trailing-dash- ok.",
        "tabs\tsrc/x.py\tv10.2.33-rc1\n/etc/hosts: ORB-E-9327!",
        # Colons: rejected before the pattern runs (file:line, pytest ids, ports, tags), or stripped.
        "src/a.py:12:def f, t/u.py::test_v[1], HOST-12:8080, v1.2.3:latest, C:/x/y, a/b/c/d.py: ok",
    ]
    for text in texts:
        forget_identifiers()
        fast = list(_ascii_identifiers(text))
        forget_identifiers()
        assert fast == list(_scanned_identifiers(text)), text
        assert fast == list(_ascii_identifiers(text))  # the verdict memo gives the same answer


def test_error_lines_follow_splitlines_and_word_boundaries() -> None:
    text = "xERROR glued\n_FATAL glued\nok FATAL: disk full\r\nTraceback (most recent call last):\u2028Error: bad x"
    assert [e for _, e in error_lines(text)] == [
        "ok FATAL: disk full",
        "Traceback (most recent call last):",
        "Error: bad x",
    ]
    assert [e for _, e in error_lines("ERROR: one and ERROR: two on a line\nno error here")] == [
        "ERROR: one and ERROR: two on a line"
    ]


def test_the_fast_ascii_path_equals_the_regex_scan_on_a_whole_session() -> None:
    # Every ASCII payload of a generated session: the byte-level classification (no decoding of
    # rejected runs) finds exactly the identifiers, in order, that the str regex scan finds.
    from contextlab import load_dataset
    from contextlab.measure.text import _ascii_identifiers, _scanned_identifiers, forget_identifiers, message_payload

    payloads = [message_payload(m) for m in load_dataset("coding-agent-short").messages]
    plain = [p for p in payloads if p.isascii() and "://" not in p]
    assert len(plain) > 20
    forget_identifiers()
    fast = [list(_ascii_identifiers(p)) for p in plain]
    forget_identifiers()
    assert fast == [list(_scanned_identifiers(p)) for p in plain]
    assert sum(map(len, fast)) > 30


def test_error_lines_by_word_hits_equal_a_search_of_every_line() -> None:
    # error_lines searches only the lines holding one of _ERROR_WORDS: it must find exactly what
    # searching every line finds (each pattern branch holds one of the words), and the Aho-Corasick
    # scan must find the words where re.finditer of their alternation does.
    import re

    from contextlab import load_dataset
    from contextlab.measure.text import _ERROR_WORDS, _error_lines_by_splitlines
    from contextlab.messages import content_text

    words = ["ERROR", "FATAL", "CRITICAL", "PANIC", "FAIL", "Traceback", "Exception", "Error", "error", "fatal", "** ("]
    alternation = re.compile("|".join(map(re.escape, words)))
    texts = [content_text(m) for m in load_dataset("support-agent").messages]
    texts += [content_text(m) for m in load_dataset("coding-agent-short").messages]
    texts += ["ERRORERROR FAILED FATAL_FAIL xFAILURE Error:Exception TracebackCRITICAL PANICERROR:"]
    texts += ["FAFATAL ERRERROR Errors: Error:: Exceptions ééFAIL\nfatalfatal: x\n** (** (KeyError) y"]
    texts += ["  ValueError: x\nis_error: no\n  12→  except KeyError:\nE   AssertionError\nerror TS2304: z"]
    hits = lines = 0
    for text in texts:
        expected = [m.start() for m in alternation.finditer(text)]
        assert [start for _word, start, _end in _ERROR_WORDS.find_matches_as_indexes(text)] == expected, text
        found = list(error_lines(text))
        assert found == list(_error_lines_by_splitlines(text)), text
        hits += len(expected)
        lines += len(found)
    assert hits > 20 and lines > 10


_PIECES = [
    "ERROR", "FATAL", "FAIL", "Exception", "Error", "error", "fatal", "** (", "** (Key)", "(", ":", "[E1]:", " TS1:",
    "ValueError:", "AssertionError", "error:", "error[E1]:", "error TS1:", "fatal:", "x", "_", " ", "\n", "\r",
    "\r\n", "\x0b", "\u2028", "E  ", "except ", "12→", "Traceback", "long enough ",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16))
def test_error_lines_by_word_hits_equal_a_search_of_every_line_on_any_text(pieces: list[str]) -> None:
    from contextlab.measure.text import _error_lines_by_splitlines

    text = "".join(pieces)
    assert list(error_lines(text)) == list(_error_lines_by_splitlines(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12))
def test_every_line_an_engine_keeps_as_an_error_is_measured(pieces: list[str]) -> None:
    from contextlab.engines.tooltext import _ERROR_LINE as ENGINE_ERROR_LINE
    from contextlab.measure.text import _CODE_LINE, is_error_line

    for line in "".join(pieces).splitlines():
        if ENGINE_ERROR_LINE.search(line) and not _CODE_LINE.match(line):
            assert is_error_line(line), line


def test_error_lines_of_other_toolchains_and_not_source_code() -> None:
    text = (
        "** (RuntimeError) Phoenix LiveView requires lazy_html\n"
        "sqlite3.OperationalError: user-defined function raised exception\n"
        "    except ImportError:\n"
        "  143→  class ParseError(Exception):\n"
        "error[E0308]: mismatched types\n"
        "src/x.ts(3,1): error TS2304: Cannot find name 'foo'.\n"
        "fatal: not a git repository\n"
        "E   AssertionError\n"
        "is_error: true, errors: 0\n"
    )
    assert [e for _, e in error_lines(text)] == [
        "** (RuntimeError) Phoenix LiveView requires lazy_html",
        "sqlite3.OperationalError: user-defined function raised exception",
        "error[E0308]: mismatched types",
        "src/x.ts(3,1): error TS2304: Cannot find name 'foo'.",
        "fatal: not a git repository",
        "E   AssertionError",
    ]


def test_closing_tags_are_markup_not_paths() -> None:
    text = "<returncode>0</returncode>\n<output>see /srv/app/main.py and </span></output>"
    assert identifiers(text) == ["/srv/app/main.py"]
    assert identifiers("open /workspace now") == ["/workspace"]  # a one-segment path stays a path


def test_task_text_passes_over_markup_and_lead_in_lines() -> None:
    from contextlab.measure.text import task_text

    ask = "<pr_description>\nConsider the following PR description:\nrequests.get sends Content-Length\nHi,"
    assert task_text(ask) == "requests.get sends Content-Length"
    assert task_text("fix it\n\nthe login test flakes on CI") == "the login test flakes on CI"
    assert task_text("Steps to follow:") == "Steps to follow:"  # nothing else can stand for the ask
    assert task_text("ok") == ""


def test_the_ascii_url_path_equals_the_regex_scan() -> None:
    # ASCII text with URLs: runs without "://" take the byte-level verdicts, URL runs are completed
    # against the text in their place; the result, order included, is the regex scan's.
    from contextlab import load_dataset
    from contextlab.measure.text import (
        _ascii_url_identifiers,
        _scanned_identifiers,
        forget_identifiers,
        message_payload,
    )

    texts = [
        "see https://a.b/c?x=1 and https://a.b/c then http://q.r/s. and xhttps://k.l/m/n.py, v1.2.3",
        "https://x.y/ab https://x.y/a https://x.y/abc src/a.py:3 PROJ-12a3 #4521 deadbeef12",
        "a://. ab://c.d https://e.f/g) (https://h.i/j/k) tests/t.py::test_u",
    ]
    payloads = [message_payload(m) for m in load_dataset("coding-agent").messages]
    texts += [p for p in dict.fromkeys(payloads) if p.isascii() and "://" in p]
    assert len(texts) > 20
    for ordered in (texts, texts[::-1]):  # verdicts memoized by earlier texts give the same answer
        forget_identifiers()
        fast = [list(_ascii_url_identifiers(text)) for text in ordered]
        assert fast == [list(_scanned_identifiers(text)) for text in ordered]
    assert sum(1 for found in fast if any("://" in token for token in found)) >= 3


def _identifier_targets_of_whole_payloads(payloads: list[str]) -> list[tuple[str, int]]:
    """The identifier targets as every distinct payload scanned whole would give them."""
    seen: dict[str, int] = {}
    for index, payload in enumerate(payloads):
        for token in identifiers(payload):
            seen.setdefault(token, index)
    return list(seen.items())


def _assert_new_lines_give_the_whole_payloads_result(payloads: list[str]) -> None:
    from contextlab.measure.targets import _identifier_targets, _new_lines
    from contextlab.measure.text import forget_identifiers

    messages = [{"role": "tool", "content": p} for p in payloads]
    forget_identifiers()
    found = [(t.key, t.message_index) for t in _identifier_targets(messages, _new_lines(messages, payloads)[0])]
    assert found == _identifier_targets_of_whole_payloads(payloads)


def test_identifier_targets_of_new_lines_equal_whole_payload_scans_on_edge_cases() -> None:
    _assert_new_lines_give_the_whole_payloads_result(
        [
            "read `src/a.py` and\n`not one` then https://h.org/x\n</output> /tmp/out.txt v1.2.3",
            "again `src/a.py` and\n`not one` then https://h.org/x\nnew: `lib/b.rs` ab12cd3e",
            "é src/a.py\n`src/c.py` v2.0.1\r\n#123 ORB-E-1 </b> x/y/z",
            "`split\nacross` lines https://h.org/x?q=1\nsrc/a.py",
        ]
    )


def test_identifier_targets_of_new_lines_equal_whole_payload_scans_on_sessions(shared_transcripts: Path) -> None:
    from contextlab import load_dataset, load_transcript
    from contextlab.measure.text import message_payload

    transcripts = [
        load_dataset("coding-agent"),
        load_dataset("support-agent"),
        *(load_transcript(p) for p in sorted((shared_transcripts / "claude-code").glob("*.jsonl"))[:2]),
    ]
    for t in transcripts:
        _assert_new_lines_give_the_whole_payloads_result([message_payload(m) for m in t.messages])


def _error_targets_of_whole_outputs(messages: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], int]]:
    """The error targets as the rule was first written: every distinct tool output read whole."""
    from contextlab.measure.targets import is_tool_output

    exemplars: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    done: set[str] = set()
    for index, message in enumerate(without_surrogates(m) for m in messages):
        text = content_text(message)
        if not is_tool_output(message) or text in done:
            continue
        done.add(text)
        for fingerprint, exemplar in error_lines(text):
            found = exemplars.setdefault(fingerprint, [])
            first.setdefault(fingerprint, index)
            if exemplar not in found and len(found) < 4:
                found.append(exemplar)
    return [(fingerprint, tuple(texts), first[fingerprint]) for fingerprint, texts in exemplars.items()]


def _error_targets_of_new_lines(messages: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], int]]:
    """The error targets as extraction finds them: from the new lines of each tool output's payload."""
    from contextlab.measure.targets import _error_targets, _new_lines
    from contextlab.measure.text import message_payload

    payloads = [message_payload(wire_message(m)) for m in messages]
    rows = [without_surrogates(m) for m in messages]
    return [(t.key, t.texts, t.message_index) for t in _error_targets(rows, _new_lines(rows, payloads)[1])]


_LINES = [
    "ERROR: shard 42 offline",
    "Traceback (most recent call last):",
    '  File "src/app.py", line 3, in <module>',
    "ValueError: bad value for the shard",
    "AssertionError",
    "    raise ValueError(x)",
    "except ValueError:",
    "error[E0308]: mismatched types here",
    "FAILED tests/test_a.py::test_b - assert 1 == 2",
    "src/x.ts(3,1): error TS2304: Cannot find name",
    "** (RuntimeError) boom in the worker",
    "all good",
    "ok",
    "",
    "   ",
    "\x0cERROR: after a form feed",
    "line\x1cFATAL: a separator inside",
    "ERROR: one\r",
    "fatal: not a git repository",
    "E   AssertionError   ",
]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["tool", "assistant", "user", "observation", "observation-api", "call"]),
            st.lists(st.sampled_from(_LINES), min_size=1, max_size=6),
            st.sampled_from(["", " ", "\n", "  \n\n", "\t"]),
        ),
        max_size=12,
    )
)
def test_error_targets_of_new_lines_equal_whole_output_reads(rows: list[tuple[str, list[str], str]]) -> None:
    # Lines are shared across roles: a line an assistant wrote (a call's argument, a reply) and a tool
    # output printed later must still be read as the tool output's; blanks around an output are
    # stripped in its payload; an observation sent with other text (api_content) is read as recorded.
    messages: list[dict[str, Any]] = []
    for kind, lines, pad in rows:
        text = pad + "\n".join(lines) + pad
        if kind == "call":
            call = {"id": "c", "type": "function", "function": {"name": "run", "arguments": json.dumps({"cmd": text})}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind.startswith("observation"):
            row = {"role": "user", "content": text, "display_kind": "observation"}
            if kind == "observation-api":
                row["api_content"] = "sent instead\n" + lines[0]
            messages.append(row)
        else:
            messages.append({"role": kind, "content": text, **({"tool_call_id": "c"} if kind == "tool" else {})})
    assert _error_targets_of_new_lines(messages) == _error_targets_of_whole_outputs(messages)


def test_error_targets_of_new_lines_equal_whole_output_reads_on_sessions(shared_transcripts: Path) -> None:
    from contextlab import load_dataset, load_transcript

    transcripts = [
        load_dataset("coding-agent"),
        load_dataset("support-agent"),
        *(load_transcript(p) for p in sorted((shared_transcripts / "claude-code").glob("*.jsonl"))),
        *(load_transcript(p) for p in sorted((shared_transcripts / "mini-swe-agent" / "trajs").glob("*"))[:4]),
    ]
    for t in transcripts:
        found = _error_targets_of_new_lines(t.messages)
        assert found == _error_targets_of_whole_outputs(t.messages)
    assert found


_DECISION_RULE = re.compile(
    r"\b(?:decided|decide to|instead|because|root cause|chose|the fix is|going with|will use)\b", re.I
)


def _decisions_by_the_rule(text: str) -> list[str]:
    """The decision rule as first written: every sentence of the text searched."""
    pieces = (raw.strip(" -*#>\t") for raw in re.split(r"(?<=[.!?])\s+|\n+", text))
    return [s for s in pieces if 20 <= len(s) <= 200 and _DECISION_RULE.search(s)]


_DECISION_PIECES = [
    *("We decided", "to go", " instead", "BECAUSE", "becauſe", "Root cause", "root\ncause", "the fix is"),
    *("going with", "WİLL use", "\u212aeep", "chose", "chosen", "xinstead", "é", "insteadé", "decide to"),
    *(" ", " ", ". ", "! ", "?\n", "\n", "\n\n", ".\n\x0b", "\x0b", "\u2028", "- ", "> ", "*", "#"),
    *("a plain sentence of some length", "word", "x" * 190),
]


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_DECISION_PIECES), max_size=16).map("".join))
def test_decision_sentences_are_those_of_the_rule(text: str) -> None:
    assert list(decision_sentences(text)) == _decisions_by_the_rule(text)


def test_decision_sentences_are_those_of_the_rule_on_sessions(shared_transcripts: Path) -> None:
    for name in ("mini-swe-agent/trajs/django__django-11138.traj.json", "claude-code/short.jsonl"):
        for message in load_transcript(shared_transcripts / name).messages:
            text = content_text(message)
            assert list(decision_sentences(text)) == _decisions_by_the_rule(text)


_SYMBOL_PIECES = [
    *("src/a.py", "v1.2.3", "HAT084", "deadbeef12", "x_y_3", "#1234", "a/b/c", "word", "12", "-", ".", ":"),
    *(" ", "\n", "\t", "→", "✓", "─", "—", "\ud800", "é", "ı", "K", "İ", "中", "²", "`", "://", "http"),
]


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_SYMBOL_PIECES), max_size=16).map("".join))
def test_text_with_symbols_is_read_as_the_regex_scan_reads_it(text: str) -> None:
    # Text whose non-ASCII characters are all symbols (a file listing's arrows) is split on bytes, its
    # URLs completed from the text; with a non-ASCII word character it is scanned by the regex.
    from contextlab.measure.text import _scanned_identifiers, forget_identifiers, identifier_parts

    forget_identifiers()
    found, _backticked = identifier_parts(text)
    forget_identifiers()
    assert list(found) == list(_scanned_identifiers(text))


def test_sessions_with_symbols_are_read_as_the_regex_scan_reads_them(shared_transcripts: Path) -> None:
    from contextlab.measure.text import _scanned_identifiers, forget_identifiers, identifier_parts, message_payload

    path = shared_transcripts / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    texts = [p for p in map(message_payload, load_transcript(path).messages) if not p.isascii() and "</" not in p]
    assert len(texts) > 50
    forget_identifiers()
    fast = [list(identifier_parts(text)[0]) for text in texts]
    forget_identifiers()
    assert fast == [list(_scanned_identifiers(text)) for text in texts]
    assert sum(map(len, fast)) > 100


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from(
            ["ERROR", "Error", "error:", "FAIL", "** (", "done", "passed", "not ", "x", " ", "\n", "é", "→"]
        ),
        max_size=30,
    ),
    st.booleans(),
)
def test_ascii_words_match_as_the_text_automaton(pieces: list[str], overlapping: bool) -> None:
    # An ASCII text is searched as bytes: the same words at the same positions as the str automaton.
    import ahocorasick_rs

    from contextlab.measure.text import AsciiWords

    text = "".join(pieces)
    words = ["ERROR", "Error", "error", "FAIL", "** (", "done", "passed", "pass", "not"]
    for kind in (ahocorasick_rs.MatchKind.Standard, ahocorasick_rs.MatchKind.LeftmostFirst):
        if overlapping and kind != ahocorasick_rs.MatchKind.Standard:
            continue  # overlapping matches are only the standard kind's
        expected = ahocorasick_rs.AhoCorasick(words, matchkind=kind).find_matches_as_indexes(
            text, overlapping=overlapping
        )
        assert AsciiWords(words, kind).find_matches_as_indexes(text, overlapping=overlapping) == expected
