"""Text helpers shared by the probes: the payload of a message and the mechanical extractors.

Every extractor is a fixed regular expression (``docs/metrics.md`` §Extractors), so the same message
always yields the same identifiers, error fingerprints and sentences.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate, filterfalse

import ahocorasick_rs

from contextlab.engine import Message
from contextlab.engines.casefold import fold_to_ascii
from contextlab.engines.summarizers.extractive import error_fingerprint  # one fingerprint rule for engines and probes
from contextlab.engines.tooltext import first_error_line
from contextlab.messages import content_text, strip_surrogates, tool_call_arguments, tool_calls


def message_payload(message: Message) -> str:
    """The text a provider sees in a message: content plus tool-call names and arguments.

    Arguments are JSON: a fact with quotes or newlines appears escaped in the raw string, so the
    decoded values are added as well (engines.md §6: "match tool JSON both raw and unescaped").
    """
    if not message.get("tool_calls"):  # most rows: the payload is the content's text
        return content_text(message)
    parts = [content_text(message)]
    for call in tool_calls(message):
        arguments = tool_call_arguments(call)
        parts.append(arguments)
        if "\\" not in arguments:
            continue  # nothing escaped: the decoded values are already substrings of the raw JSON
        try:
            decoded = json.loads(arguments)
        except (ValueError, TypeError):
            continue
        if isinstance(decoded, dict):
            parts.extend(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in decoded.values())
        else:
            parts.append(json.dumps(decoded, ensure_ascii=False))
    # In a wire row only a decoded value can hold a lone surrogate (the host sends its JSON escape):
    # read as sent, with U+FFFD in its place.
    return strip_surrogates("\n".join(parts))


# Identifier shapes (the Hermes anchor index, engines.md §5.0): URLs, paths, SHAs, UUIDs, #refs,
# versions, ISO dates, file names, ALL-CAPS codes with digits (ticket ids, error codes, booking
# references, flight numbers), snake_case names with digits (user and record ids: `mia_li_3668`) and
# backticked tokens. Every shape but the URL holds only ASCII class characters. Candidates
# are found by one character-class scan (C speed, no backtracking) and classified by one full match:
# a single alternation with lookaheads over the whole text is ~20x slower.
_CANDIDATE_CLASS = r"[\w./:#@+~-]{5,}"
_CANDIDATE = re.compile(_CANDIDATE_CLASS)
_CANDIDATE_ASCII = re.compile(_CANDIDATE_CLASS, re.ASCII)
"""The same scan for ASCII text (equal results there; a table lookup instead of a Unicode check)."""
_MARK = re.compile(r"[\d/.#-]")
_IDENTIFIER = re.compile(
    r"https?://[^\s<>\"'`)\]]+"
    r"|(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]*\w"  # absolute, ./ or ~/ paths
    r"|(?:[\w.@+-]+/)+[\w@+-]+\.\w{1,6}"  # relative paths with an extension
    r"|(?:[\w.@+-]+/){2,}[\w.@+-]*\w"  # two or more segments ("role/tool" labels are not paths)
    r"|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"  # UUIDs
    r"|#\d{2,6}"
    r"|v?\d+\.\d+\.\d+(?:[-.][0-9A-Za-z]+)*"
    r"|\d{4}-\d{2}-\d{2}"  # ISO dates
    r"|[\w-]+\.(?:py|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|rs|go|java|rb|sh|sql|html|css|cfg|ini|lock|csv)"
    r"|[A-Z][A-Z0-9]{1,9}-[A-Z0-9-]*\d[A-Z0-9-]*"
    # Codes of capitals and digits, at least one of each, whole runs of up to 20 (`HAT084`, `4BMN53`):
    # an all-digit run is a count or a line number, an all-letter one a word or an acronym.
    r"|(?=[0-9]*[A-Z])(?=[A-Z]*[0-9])[A-Z0-9]{5,20}"
    # A name with an underscore and a digit, starting with a letter (`sofia_kim_7287`, `layer_2_norm`).
    r"|(?=[A-Za-z0-9_]*\d)[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+"
)
_BACKTICKED = re.compile(r"`([^`\s]{5,80})`")
_CLOSING_TAG = re.compile(r"</[A-Za-z][\w:-]*>")
MIN_IDENTIFIER_CHARS = 5
"""Shorter tokens (``a.py``, ``#12``) occur by chance too often to say anything about retention."""

_URL = "://"
_UNSEEN = ""  # never an identifier (those have at least 5 characters)
_CLASSIFIED: dict[str, str | None] = {}
"""Candidate -> identifier (or None): the verdict depends on the candidate alone (URLs aside, which
are completed from their text), and a session repeats the same few thousand candidates."""
_RUNS: dict[bytes, str | None] = {}
"""The same verdicts for :func:`_ascii_identifiers`, by byte run (short runs included, as None)."""
_URL_RUN = "\x00"
"""The verdict :data:`_RUNS` keeps for a run holding ``://`` (never an identifier: those are class
characters): a URL is completed from the text it is in, by :func:`_ascii_url_identifiers`."""
_MEMO_MAX = 200_000
_RUN_BREAK = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) in "_./:#@+~-"))
_ASCII_MARKS = frozenset(b"0123456789/.#-")
_TO_SPACE = bytes.maketrans(_RUN_BREAK, b" " * len(_RUN_BREAK))
"""ASCII bytes outside the candidate class become spaces, so ``bytes.split`` yields the class runs."""
_NON_ASCII_TO_SPACE = bytes.maketrans(_RUN_BREAK + bytes(range(128, 256)), b" " * (len(_RUN_BREAK) + 128))
""":data:`_TO_SPACE` for UTF-8: the bytes of non-ASCII characters become spaces too."""
_ASCII_BYTES = bytes(range(128))
_WORD_CHARACTER = re.compile(r"\w")


def forget_identifiers() -> None:
    """Empty the candidate verdict memos (what :func:`identifiers` has learnt from earlier texts)."""
    _CLASSIFIED.clear()
    _RUNS.clear()


def _classify(raw: str) -> str | None:
    token = raw.rstrip(".,:;-")
    if len(token) < MIN_IDENTIFIER_CHARS or _MARK.search(token) is None:
        return None
    if _URL in token:
        return token  # completed against the text by the caller
    return token if _IDENTIFIER.fullmatch(token) is not None else None


_IDENTIFIER_ASCII = re.compile(_IDENTIFIER.pattern.encode("ascii"))
"""``_IDENTIFIER`` over bytes: on ASCII text without ``://`` (the URL branch, the only one whose whitespace
class differs) it matches exactly what the str pattern matches, without decoding the candidate."""


def _classify_ascii(raw: bytes) -> str | None:
    """:func:`_classify` of an ASCII run of a text without ``://``, decoded only when it is an identifier."""
    token = raw.rstrip(b".,:;-")
    # No branch of the pattern but the URL one (absent here) admits a colon: most runs that carry
    # one (``file.py:12:def``, pytest ids ``a.py::test``) are decided without running it.
    if len(token) < MIN_IDENTIFIER_CHARS or b":" in token or _ASCII_MARKS.isdisjoint(token):
        return None
    return token.decode("ascii") if _IDENTIFIER_ASCII.fullmatch(token) is not None else None


def identifiers(text: str) -> list[str]:
    """Identifier-like tokens of ``text``, in order of first occurrence, without duplicates."""
    if not text:
        return []
    found, backticked = identifier_parts(text)
    for token in backticked:
        found.setdefault(token, None)
    return list(found)


def identifier_parts(text: str) -> tuple[dict[str, None], list[str]]:
    """:func:`identifiers` of ``text`` in its two parts: the identifiers of its character runs, in
    order of first occurrence, and then its backticked tokens (some may repeat a run's): the
    identifiers are the first followed by those of the second it does not hold. Neither part spans a
    line, and without ``://`` (a URL is completed from its first occurrence in the whole text) the
    parts of a text are those of its lines laid end to end."""
    if "</" in text:
        text = _CLOSING_TAG.sub(" ", text)  # `</output>` is markup, not the path `/output`
    if text.isascii():
        found = _ascii_url_identifiers(text) if _URL in text else _ascii_identifiers(text)
    elif (blanked := _symbols_blanked(text)) is not None:
        found = _url_identifiers_of_runs(text, blanked) if _URL in text else _identifiers_of_runs(blanked)
    else:
        found = _scanned_identifiers(text)
    backticked: list[str] = []
    if "`" in text:
        for match in _BACKTICKED.finditer(text):
            token = match.group(1).strip()
            if len(token) >= MIN_IDENTIFIER_CHARS and not _plain_word(token):
                backticked.append(token)
    return found, backticked


def _plain_word(token: str) -> bool:
    """A word of letters only, lower case, capitalised or all capitals (`state`, `Source`, `README`):
    backticks around it name a field or a file, but as a retention anchor it stays in any context by
    chance. A name with a capital inside (`getUser`, `ContextEngine`) or any other character is kept."""
    return token.isalpha() and (token.isupper() or not any(map(str.isupper, token[1:])))


def _symbols_blanked(text: str) -> bytes | None:
    """``text``'s UTF-8 with every byte outside the candidate class a space, when none of its non-ASCII
    characters is a word character (a file listing's arrows, box drawing, check marks), else None.
    Without such characters the class runs of this are :func:`_scanned_identifiers`' candidates: no
    non-ASCII character is in the class."""
    raw = text.encode("utf-8", "surrogatepass")
    outside = raw.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")  # C speed; a few characters
    if _WORD_CHARACTER.search(outside) is not None:
        return None
    return raw.translate(_NON_ASCII_TO_SPACE)


def _ascii_identifiers(text: str) -> dict[str, None]:
    """The candidate scan of :func:`_scanned_identifiers` for ASCII text without URLs, at C speed."""
    return _identifiers_of_runs(text.encode("ascii").translate(_TO_SPACE))


def _identifiers_of_runs(blanked: bytes) -> dict[str, None]:
    """The identifiers of the class runs of ``blanked`` (every byte outside the candidate class a
    space): one split gives the runs, ``filterfalse`` the ones never seen, and a ``map`` over the
    memo the verdicts in order (no Python step per known run)."""
    # Runs of letters only hold no mark character: they are dropped before any memo lookup.
    runs = list(filterfalse(bytes.isalpha, blanked.split()))
    memo = _RUNS
    if len(memo) > _MEMO_MAX:
        memo.clear()
    for raw in list(filterfalse(memo.__contains__, runs)):
        if raw in memo:
            continue  # a run repeated within this text
        # Most runs are words: no mark character (ASCII digits or /.#-, what _MARK matches in ASCII).
        if len(raw) < MIN_IDENTIFIER_CHARS or _ASCII_MARKS.isdisjoint(raw):
            memo[raw] = None
        else:
            memo[raw] = _classify_ascii(raw)
    return dict.fromkeys(filter(None, map(memo.__getitem__, runs)))


def _ascii_url_identifiers(text: str) -> dict[str, None]:
    """:func:`_scanned_identifiers` of ASCII text with URLs, at nearly the speed of :func:`_ascii_identifiers`."""
    return _url_identifiers_of_runs(text, text.encode("ascii").translate(_TO_SPACE))


def _url_identifiers_of_runs(text: str, blanked: bytes) -> dict[str, None]:
    """:func:`_scanned_identifiers` of a text with URLs whose class runs are those of ``blanked``
    (:func:`_identifiers_of_runs`): runs without ``://`` take their memoized verdicts and are added
    a slice at a time; each URL run (its verdict is :data:`_URL_RUN`) is completed against ``text``
    in its place in the order of first occurrence, as the regex scan does (a URL may run on through
    characters outside the class)."""
    runs = dict.fromkeys(filterfalse(bytes.isalpha, blanked.split()))
    memo = _RUNS
    if len(memo) > _MEMO_MAX:
        memo.clear()
    for raw in list(filterfalse(memo.__contains__, runs)):
        if len(raw) < MIN_IDENTIFIER_CHARS or _ASCII_MARKS.isdisjoint(raw):
            memo[raw] = None
        else:
            memo[raw] = _URL_RUN if b"://" in raw else _classify_ascii(raw)
    distinct = list(runs)
    verdicts = list(map(memo.__getitem__, distinct))
    seen: dict[str, None] = {}
    start = 0
    while True:
        try:
            at = verdicts.index(_URL_RUN, start)
        except ValueError:
            at = len(verdicts)
        seen.update(dict.fromkeys(filter(None, verdicts[start:at])))  # known keys keep their place
        if at == len(verdicts):
            return seen
        _add_candidate(text, distinct[at].decode("ascii"), seen)
        start = at + 1


def _scanned_identifiers(text: str) -> dict[str, None]:
    seen: dict[str, None] = {}
    scan = _CANDIDATE_ASCII if text.isascii() else _CANDIDATE
    # Each distinct candidate once, in order of first occurrence (a tool output repeats its paths).
    for raw in dict.fromkeys(scan.findall(text)):
        _add_candidate(text, raw, seen)
    return seen


def _add_candidate(text: str, raw: str, seen: dict[str, None]) -> None:
    """Add the identifier candidate ``raw`` of ``text`` stands for to ``seen`` (a URL is completed
    from its first occurrence in the text)."""
    classified = _CLASSIFIED
    token = classified.get(raw, _UNSEEN)
    if token == _UNSEEN:
        if len(classified) > _MEMO_MAX:
            classified.clear()
        token = classified[raw] = _classify(raw)
    if token is None or token in seen:
        return
    if _URL in token:
        start = text.find(token)
        url = _IDENTIFIER.match(text, start) if start >= 0 else None
        token = url.group(0).rstrip(".,:;") if url else token
        if _IDENTIFIER.fullmatch(token) is None:
            return
    seen[token] = None


_ERROR_WORD = re.compile(r"\b(?:ERROR|FATAL|CRITICAL|PANIC|FAIL(?:ED|URE)?|Traceback|Exception|Error:)")
# Besides: what the engines' summaries keep as an error line (contextlab.engines.tooltext's rule, so
# every error an engine may carry forward is measured: `sqlite3.OperationalError: x`, `error: ...`,
# `error[E0308]: ...`, `fatal: ...`), and TypeScript (`x.ts(3,1): error TS2304: ...`), Elixir
# (`** (RuntimeError) ...`) and a bare exception line (Python prints `AssertionError` alone when the
# assertion has no message).
_ENGINE_ONLY_HINTS = ("Error:", "Exception:", "error:", "error[", "fatal:")
"""Substrings one of which every match of the engines' error rule that _ERROR_WORD misses holds
(``ValueError:``, ``error[E0308]:``, ``fatal:``; tested against that rule)."""
_TYPESCRIPT = re.compile(r"\berror TS\d+:")
_ELIXIR = re.compile(r"\s*\*\* \([A-Z][\w.]*\)")
_BARE_EXCEPTION = re.compile(r"\s*(?:E\s+)?[A-Z]\w*(?:Error|Exception)\s*$")
_CODE_LINE = re.compile(r"\s*(?:\d+(?:→|\t|:)\s*)?(?:except|catch|rescue|class|def|raise|throw)\b")
"""A line of source code (an editor listing may number it) that names an exception class is no error."""


def is_error_line(line: str) -> bool:
    """Whether one line (no line break in it) reports an error (``docs/metrics.md``, Targets)."""
    return _CODE_LINE.match(line) is None and (_ERROR_WORD.search(line) is not None or _other_error(line))


def _other_error(line: str) -> bool:
    """The error shapes besides :data:`_ERROR_WORD`'s. Each pattern runs only when a substring it needs
    is in the line (C-speed ``in`` checks): most lines that mention an error are code (``errors``,
    ``ValidationError(``) and are passed over without a regex."""
    # The engines' rule. What it finds beyond _ERROR_WORD holds one of these substrings (C-speed ``in``
    # checks; its own regex tries every position, 3 us a line): most candidate lines are code.
    if any(map(line.__contains__, _ENGINE_ONLY_HINTS)) and first_error_line(line) is not None:
        return True
    if "error TS" in line and _TYPESCRIPT.search(line) is not None:
        return True
    if "** (" in line and _ELIXIR.match(line) is not None:
        return True
    bare = line.endswith(("Error", "Exception")) or (
        line[-1:].isspace() and line.rstrip().endswith(("Error", "Exception"))
    )
    return bare and _BARE_EXCEPTION.match(line) is not None


class AsciiWords:
    """An Aho-Corasick automaton of ASCII words, whose matches are read by position: an ASCII text is
    searched as bytes, where a match's offsets are its character offsets. Searching a ``str``, the
    automaton turns each match's UTF-8 offsets into character offsets, which took 60% of the time of
    a search of coding-agent's tool outputs (4.2 ms against 1.7 ms over 3.8 MB, the same matches)."""

    def __init__(
        self, words: list[str], matchkind: ahocorasick_rs.MatchKind = ahocorasick_rs.MatchKind.Standard
    ) -> None:
        self._text = ahocorasick_rs.AhoCorasick(words, matchkind=matchkind)
        self._bytes = ahocorasick_rs.BytesAhoCorasick([word.encode("ascii") for word in words], matchkind=matchkind)

    def find_matches_as_indexes(self, text: str, overlapping: bool = False) -> list[tuple[int, int, int]]:
        """``(word, start, end)`` of each match in ``text``, as ``ahocorasick_rs`` gives them."""
        if text.isascii():  # O(1): a flag of the string
            return self._bytes.find_matches_as_indexes(text.encode("ascii"), overlapping=overlapping)
        return self._text.find_matches_as_indexes(text, overlapping=overlapping)


_ERROR_WORDS = AsciiWords(
    ["ERROR", "FATAL", "CRITICAL", "PANIC", "FAIL", "Traceback", "Exception", "Error", "error", "fatal", "** ("],
    matchkind=ahocorasick_rs.MatchKind.LeftmostFirst,
)
"""Literal words, one of which every error line (:func:`is_error_line`) contains, found by Aho-Corasick
(three times as fast as a regex alternation): only a line with a hit is looked at."""
_ERROR_CAPITALISED = 7
"""The index of ``Error`` in :data:`_ERROR_WORDS` (an ``_ERROR_WORD`` match only with a colon after it)."""
_OTHER_WORDS = 8
"""Words from this index on belong to the other shapes only (:func:`_other_error`)."""
_EXCEPTION = 6
"""``Exception`` and ``Error`` (from this index to :data:`_OTHER_WORDS`) also start the other shapes."""
_NEEDED_AFTER: tuple[tuple[str, ...], ...] = ((":", "[", " TS"), (":",), ("",))
"""What must follow ``error``, ``fatal`` and ``** (`` for a line to be one of the other shapes."""

_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""Line breaks ``str.splitlines`` honours besides ``\\n``."""
EXEMPLAR_CHARS = 100
"""An error exemplar is the line's first 100 characters: summaries quote error lines cut at 120-160."""


def error_lines(text: str) -> Iterator[tuple[str, str]]:
    """``(fingerprint, exemplar)`` for every error line of a tool output (each line once, in order).

    Only the ``\\n``-lines holding one of :data:`_ERROR_WORDS` are looked at (every error line holds
    one), and :data:`_ERROR_WORD`'s rule is read off the word hits themselves (a hit with a word
    boundary before it; ``Error`` followed by a colon), as :func:`is_error_line` of each line decides
    it; a candidate line holding another line break is split as ``str.splitlines`` splits (tested)."""
    if not text:
        return
    hits = _ERROR_WORDS.find_matches_as_indexes(text)
    line_end = -1
    start = 0
    plain = False  # the current line holds an _ERROR_WORD match
    maybe = False  # ... or a hit one of the other shapes needs (_other_error then decides)
    for word, at, end in hits:
        if at >= line_end:
            if plain or maybe:
                yield from _errors_of(text[start:line_end], plain)
            start = text.rfind("\n", 0, at) + 1
            stop = text.find("\n", at)
            line_end = stop if stop >= 0 else len(text)
            plain = maybe = False
        if plain:
            continue
        if word < _OTHER_WORDS:
            if (not at or not (text[at - 1].isalnum() or text[at - 1] == "_")) and (
                word != _ERROR_CAPITALISED or text.startswith(":", end)
            ):
                plain = True  # a word boundary before it: the same test as ``\b`` in _ERROR_WORD
            elif not maybe and word >= _EXCEPTION:
                # `ValueError:` (an exception line) or `AssertionError` at the end of its line.
                after = text[end : end + 1]
                maybe = after == ":" or not after or after.isspace()
        elif not maybe:
            maybe = text.startswith(_NEEDED_AFTER[word - _OTHER_WORDS], end)
    if plain or maybe:
        yield from _errors_of(text[start:line_end], plain)


def _errors_of(line: str, plain: bool) -> Iterator[tuple[str, str]]:
    """The error of one candidate line (``plain``: it holds an :data:`_ERROR_WORD` match)."""
    if _OTHER_BREAKS.search(line) is not None:
        yield from _error_lines_by_splitlines(line)  # rare: lines exactly as splitlines finds them
        return
    if _CODE_LINE.match(line) is not None or not (plain or _other_error(line)):
        return
    exemplar = line.strip()[:EXEMPLAR_CHARS].strip()
    if len(exemplar) >= 8:
        yield error_fingerprint(exemplar), exemplar


def _error_lines_by_splitlines(text: str) -> Iterator[tuple[str, str]]:
    for line in text.splitlines():
        if not is_error_line(line):
            continue
        exemplar = line.strip()[:EXEMPLAR_CHARS].strip()
        if len(exemplar) >= 8:
            yield error_fingerprint(exemplar), exemplar


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|don't|do not|avoid|only|make sure|required?|should(?:n't)?|please keep)\b", re.I
)
_CORRECTION = re.compile(
    r"^(?:no\b|nope\b|actually\b|wait\b|instead\b|stop\b|that's (?:wrong|not)|that is (?:wrong|not)|not that\b|undo\b)"
    r"|\b(?:i said|i meant|you (?:broke|missed|forgot))\b",
    re.I,
)
_NOT_A_DIRECTIVE = re.compile(
    # A cue word in a statement about the speaker or the world, not a rule for the agent: what the
    # user does not remember or have, what must have happened, the speaker's own promise, a past
    # habit, what the speaker expects for themself, "the only ...". ("It should be ..." stays: in an
    # issue text it states the required behaviour.)
    r"\b(?:i|we)\s+(?:(?:still|actually|really|even|just)\s+)?(?:do not|don't|dont|didn't|did not)\s+"
    r"(?:(?:actually|really|even|quite)\s+)?(?:remember|recall|have|know|think|see|understand|believe|mind|care|recognize|get)\b"
    r"|\b(?:i|it|there|that|this|he|she|they|you)\s+must\s+(?:have|be)\b"
    r"|\b(?:i|we)(?:'ll| will|'m going to| am going to)\s+(?:\w+\s+)?make sure\b"
    r"|\b(?:i|we)(?:'ve| have| had)?\s+(?:always|never)\s+(?:had|been|flown|used|seen|done|got|gotten|liked)\b"
    r"|\bi\s+should(?:n't)?\s+(?:be|have|get)\b"
    r"|\bthe\s+only\b",
    re.I,
)
_REQUEST = re.compile(r"^(?:please\b|(?:could|can|would|will)\s+you\b)", re.I)
"""A question that asks the agent to do something (``Could you make sure ...?``) can carry a rule."""
_NOT_A_CORRECTION = re.compile(
    r"^no\b[,.!]?\s*(?:that's all|that is all|thanks|thank you|nothing else|i'm good|i am good|that's it)\b", re.I
)
"""A "no" that answers "anything else?" closes the conversation; it corrects nothing."""
SENTENCE_CHARS = 160


def constraint_sentences(text: str) -> Iterator[tuple[str, str]]:
    """``(sentence, "instruction" | "correction")`` for the constraint sentences of a user message.

    A sentence is an instruction when a cue word (must, never, don't, only, make sure ...) remains
    once the statements that merely contain one are set aside (``I don't remember the ID``, ``it must
    have been``, ``I'll make sure to``, ``I'm the only passenger``), and it is not a question other
    than a request (``Could you make sure ...?``)."""
    for raw in _SENTENCE_SPLIT.split(text):
        sentence = raw.strip(" -*#>\t")[:SENTENCE_CHARS].strip()
        if len(sentence) < 12:
            continue
        if _CORRECTION.search(sentence):
            if not _NOT_A_CORRECTION.search(sentence):
                yield sentence, "correction"
        elif _CONSTRAINT.search(sentence) and _is_directive(sentence, raw.rstrip().endswith("?")):
            yield sentence, "instruction"


def _is_directive(sentence: str, question: bool) -> bool:
    if question and not _REQUEST.search(sentence):
        return False
    return _CONSTRAINT.search(_NOT_A_DIRECTIVE.sub(" ", sentence)) is not None


def task_text(text: str) -> str:
    """The literal that stands for a user ask: its first line of at least 8 characters that states
    something, cut to 160 characters. Lines of markup tags only (``<pr_description>``) and lead-in
    lines ending with a colon (``Consider the following PR description:``) are passed over while a
    later line can stand for the ask; otherwise the first long line is used."""
    lines = [line.strip() for line in text.splitlines()]
    long = [line for line in lines if len(line) >= 8]
    stating = [line for line in long if not line.endswith(":") and _TAGS_ONLY.fullmatch(line) is None]
    chosen = stating or long
    return chosen[0][:SENTENCE_CHARS].strip() if chosen else ""


_TAGS_ONLY = re.compile(r"(?:<[^<>]+>\s*)+")

_GO_ON = re.compile(
    r"(?:yes|yeah|yep|yup|sure|ok|okay|no|nope|continue|proceed|go ahead|go on|keep going|carry on|"
    r"do it|sounds good|looks good|great|perfect|correct|right|thanks|thank you)\b",
    re.I,
)
"""How a go-on, an answer or thanks opens (``continue``, ``Yes, please proceed.``, ``Sure, it's ...``)."""
_REQUEST_CUE = re.compile(
    r"\?|\b(?:i want|i need|i'd like|i would like|i'd prefer|i would prefer|can you|could you|would you|"
    r"help me|let's|also|instead|but)\b|\bplease\b(?!\s+(?:proceed|continue|go ahead|do|confirm))",
    re.I,
)
"""What makes a message an ask of its own: a question, a wish, a request, a change of course."""
_ORDER = re.compile(
    r"[\s,.!;:-]*(?:(?:now|then|and|so|just|also)\s+)?(?:add|book|build|cancel|change|check|create|delete|deploy|"
    r"downgrade|explain|find|fix|get|give|implement|install|list|look|make|move|open|refactor|remove|rename|"
    r"revert|run|send|set|show|start|stop|switch|tell|test|try|undo|update|upgrade|use|write)\b",
    re.I,
)
"""A message (after its opener) that starts with an order is a new ask (``Thanks, now cancel ...``)."""
CONTINUATION_CHARS = 200
"""A go-on or an answer is short: a longer message states something of its own."""


def is_continuation(text: str, answers_question: bool) -> bool:
    """A user message that carries the current ask on rather than opening one: a go-on, an answer
    or thanks (``continue``, ``Yes, please proceed.``, ``Sure, it's mia_li_3668.``) or, when the
    agent's last words were a question (``answers_question``), a short reply (``I don't remember the
    reservation ID.``); never one with a request, a question or an order of its own (``Cancel
    HXDUBJ``, ``Thanks, now cancel ...``). The active task stays the ask before it."""
    stripped = text.strip()
    if len(stripped) > CONTINUATION_CHARS or _REQUEST_CUE.search(stripped) is not None:
        return False
    opener = _GO_ON.match(stripped)
    if _ORDER.match(stripped, opener.end() if opener else 0) is not None:
        return False
    return answers_question or opener is not None


_DECISION_CUES = (
    "decided",
    "decide to",
    "instead",
    "because",
    "root cause",
    "chose",
    "the fix is",
    "going with",
    "will use",
)
_DECISION = re.compile(r"\b(?:" + "|".join(_DECISION_CUES) + r")\b", re.I)
_DECISION_CUE_WORDS = AsciiWords(list(_DECISION_CUES))
"""The cues as literals: found in :func:`~contextlab.engines.casefold.fold_to_ascii`'s form of a text
wherever :data:`_DECISION` can match in it (the regex tries every position of every text: about
35 MB/s, the automaton scans at C speed)."""
_SENTENCE_PARTS = re.compile(f"({_SENTENCE_SPLIT.pattern})")
""":data:`_SENTENCE_SPLIT` keeping the separators, so each sentence's place in the text is known."""


def decision_sentences(text: str) -> Iterator[str]:
    """Assistant sentences that record a decision (cue words as in engines.md §5.0), in order:
    the ``_SENTENCE_SPLIT`` pieces of ``text`` that, stripped, are 20-200 characters long and hold a
    ``_DECISION`` match. Only the pieces holding a cue literal are looked at (a match is one; no
    cue spans a separator, whose characters are blanks after ``.!?`` or line breaks)."""
    if not text:
        return
    cues = _DECISION_CUE_WORDS.find_matches_as_indexes(fold_to_ascii(text))
    if not cues:
        return
    parts = _SENTENCE_PARTS.split(text)  # sentences at even positions, separators between them
    ends = list(accumulate(map(len, parts)))
    for k in sorted({bisect_right(ends, start) for _cue, start, _end in cues}):
        sentence = parts[k].strip(" -*#>\t")
        if 20 <= len(sentence) <= 200 and _DECISION.search(sentence):
            yield sentence
