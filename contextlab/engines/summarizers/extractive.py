"""The offline extractive summarizer: deterministic, no network, budget-aware.

Two layers, so other engines can reuse either:

* **Extraction primitives** (:func:`extract`): walk a span of messages once and collect keyed
  :class:`Item` lists per *source* (user requests verbatim, files and artifacts, errors by
  fingerprint, decisions, identifiers, timeline, current state, actions, ...).
* **A renderer** (:func:`render`): lay the items out under a
  :class:`~contextlab.engines.summarizers.template.SummaryTemplate`, merge a previous summary
  (``anchored``: keyed sets, new items appended; ``regenerate``: carried lines cut to 120 chars),
  and fit a token budget by trimming lowest-rank sections oldest-first, focus-matching items last.

:class:`ExtractiveSummarizer` glues them behind the :class:`~contextlab.engines.summarizers.base.Summarizer`
interface. Budgets are rough tokens (``(chars + 3) // 4``, the host's estimator).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress
from operator import methodcaller

from contextlab import hermes_texts
from contextlab.engine import Message
from contextlab.engines.summarizers.base import SummaryRequest
from contextlab.engines.summarizers.template import SOURCE_ORDER, SectionSpec, SummaryTemplate
from contextlab.engines.tooltext import (
    ERROR_HINT,
    call_target,
    error_line_of,
    first_error_line,
    is_read,
    is_terminal,
    lines_that_may_report_errors,
    one_line,
    result_outcome,
)
from contextlab.messages import content_text, tool_call_arguments, tool_call_name, tool_calls
from contextlab.redact import redact
from contextlab.textmemo import TextMemo
from contextlab.tool_arguments import parsed_arguments

FOCUS_SHARE = 0.65
"""With an explicit focus topic, non-matching items get at most 1 − this share of the budget."""
REGENERATE_LINE_CHARS = 120
"""``regenerate`` mode cuts every carried line to this many characters (loss compounds)."""
NO_USER_TURNS = "None. This session contains no user-authored turns."
SNAPSHOT_LEAD = "User asked (deterministic, from compacted turns): "
SNAPSHOT_NOTE = "Historical only; newer protected-tail messages after this summary win."
SNAPSHOT_CHARS = 1400

_SUMMARY_MARKERS = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[PRIOR CONTEXT")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


class _Cues:
    """A cue-word matcher: a fast unanchored pass on lowercase text, confirmed with word boundaries.

    A leading ``\\b`` (or ``(?i)``) defeats the regex engine's literal-prefix scan and made the
    whole-text pass several times slower on long prose.
    """

    def __init__(self, words: str) -> None:
        self._fast = re.compile(f"(?:{words})")
        self._strict = re.compile(rf"\b(?:{words})\b")

    def in_text(self, lowered: str) -> bool:
        return self._fast.search(lowered) is not None

    def in_sentence(self, sentence: str) -> bool:
        lowered = sentence.lower()
        return self._fast.search(lowered) is not None and self._strict.search(lowered) is not None


_DECISION_CUES = _Cues("decided|decide to|will|instead|because|root cause|chose|choose|fix is|going with")
_CONSTRAINT_CUES = _Cues(
    "must|never|always|don't|do not|avoid|prefer|should(?:n't)?|make sure|only use|without|required?"
)
_REMAINING_CUES = _Cues("next|todo|to-do|remaining|still need|not yet|left to|pending|follow[- ]up")
_EXTENSIONS = (
    "py|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|rs|go|java|c|h|cpp|hpp|rb|sh|sql|html|css|ipynb|cfg|ini|lock|csv|xml"
)
_PATH_TOKEN = re.compile(rf"(?:~|\.{{1,2}})?/?(?:[\w.@+-]+/)+[\w.@+-]+|[\w-]+\.(?:{_EXTENSIONS})\b")
_EXT_TOKEN = re.compile(rf"[\w-]+\.(?:{_EXTENSIONS})\b")
"""The extension branch of :data:`_PATH_TOKEN` alone."""
_TOKEN_STRIP = "\"'`()[]{}<>,;:!?*"
_PATH_WORD = re.compile(rf"(?<!\S)[^\s/]*?(?:/|\.(?:{_EXTENSIONS})\b)\S*")
"""A whole whitespace-separated word holding a "/" or a known ".ext" (matched from its first character
only): a word :data:`_PATH_TOKEN` can match in, once stripped, must hold one (stripped characters are
not word characters, so the ``\\b`` after an extension holds in the word as in the stripped token)."""
_PATH_MARK = re.compile(rf"/|\.(?:{_EXTENSIONS})\b")
"""What makes a word a :data:`_PATH_WORD`: a "/" or a known ".ext". It opens with a character set, so
the regex engine skips to candidates at C speed."""
_ASCII_SPACES = bytes(c for c in range(128) if chr(c).isspace())
"""The ASCII bytes ``\\s`` matches (``str.isspace``: tab to carriage return, 0x1c-0x1f, space)."""
_ASCII_SPACE_TO_SPACE = bytes.maketrans(_ASCII_SPACES, b" " * len(_ASCII_SPACES))
_HEX_RUN = re.compile(r"[0-9a-f]{7}")
_HEX_TO_X = bytes(ord("x") if chr(c) in "0123456789abcdef" else ord(" ") for c in range(256))


def _has_hex_run(text: str) -> bool:
    """Whether ``text`` holds seven lowercase hex digits in a row (every hex identifier does): on ASCII
    text a byte translation and one substring search, 7x faster than the regex, which starts a
    match at every letter a-f."""
    if text.isascii():
        return b"xxxxxxx" in text.encode("ascii").translate(_HEX_TO_X)
    return _HEX_RUN.search(text) is not None


_IDENTIFIER_PATTERNS: tuple[tuple[str, Callable[[str], object] | None, re.Pattern[str]], ...] = (
    ("://", None, re.compile(r"https?://[^\s<>\"'`)\]]+")),
    # Each pattern opens with the character it starts at, then a lookbehind for the word boundary
    # (``#(?<![\w&]#)`` is ``\b#`` with ``&#`` excluded): a leading ``\b`` or lookbehind makes the
    # regex engine try every position, a leading character set lets it skip to candidates at C speed
    # (the hex, version and size patterns: 1.4-1.9x faster on coding-agent's texts, the same matches;
    # tests/engines/test_extractive_patterns.py checks them against the plain ``\b`` forms).
    (
        "",
        _has_hex_run,
        re.compile(
            r"[0-9a-f](?<!\w[0-9a-f])(?:(?<=\d)|(?=[0-9a-f]*\d))(?:(?<=[a-f])|(?=[0-9a-f]*[a-f]))[0-9a-f]{6,39}\b"
        ),
    ),
    ("#", None, re.compile(r"#(?<![\w&]#)\d{1,6}\b")),
    (
        ".",
        re.compile(r"\d\.\d").search,
        re.compile(
            r"v(?<!\wv)(?:\d+\.\d+\.\d+(?:[-.][0-9A-Za-z]+)*\b|\d+\.\d+\b)"
            r"|\d(?<!\w\d)\d*\.\d+\.\d+(?:[-.][0-9A-Za-z]+)*\b"
        ),
    ),
    ("`", None, re.compile(r"`[^`\n]{2,80}`")),
    (
        "",
        re.compile(r"\d\s?(?:ms|sec|minutes|KB|MB|GB|TB|KiB|MiB|GiB|tokens|px|%)").search,
        re.compile(r"\d(?<!\w\d)\d*(?:\.\d+)?\s?(?:ms|sec|seconds|minutes|KB|MB|GB|TB|KiB|MiB|GiB|tokens|px|%)(?!\w)"),
    ),
)
"""Per identifier pattern: a literal that any match contains and a gate that is true of any text with
a match ("" / None: none). A text without the literal or failing the gate skips the pattern (most
texts have no match at all)."""
_ERROR_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b(?:0x)?[0-9a-f]{6,}\b"), "<hex>"),
    (re.compile(r"\d+"), "<n>"),
)
_WORD = re.compile(r"[a-z0-9_][a-z0-9_.-]{2,}")
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "about",
        "what",
        "when",
        "where",
        "which",
        "while",
        "your",
        "you",
        "are",
        "was",
        "were",
        "have",
        "has",
        "had",
        "not",
        "but",
        "can",
        "could",
        "should",
        "would",
        "will",
        "just",
        "then",
        "than",
        "them",
        "they",
        "their",
        "there",
        "here",
        "also",
        "only",
        "some",
        "any",
        "all",
        "more",
        "most",
        "other",
        "such",
        "very",
        "recent",
        "user",
        "focus",
        "please",
    ]
)


@dataclass(frozen=True)
class Item:
    """One summary line: ``key`` deduplicates (anchored merge), ``order`` ranks recency (higher = newer)."""

    key: str
    text: str
    order: int


Extraction = dict[str, list[Item]]
"""Source name → items in extraction order (oldest first)."""


# --------------------------------------------------------------------------- helpers


def default_budget(span_tokens: int) -> int:
    """``engines.md`` §5.0 budget: ``clamp(0.20 × span tokens, 2,000, 10,000)``."""
    return max(2_000, min(int(0.20 * span_tokens), 10_000))


def is_summary_text(text: str) -> bool:
    """True for handoff text an earlier compaction wrote (never treated as a user request)."""
    head = text.lstrip()[:64]
    return any(head.startswith(marker) for marker in _SUMMARY_MARKERS)


def is_real_user(message: Message) -> bool:
    """A user-authored message: role user, not a handoff summary (any engine's), not blank, and not a
    row the Hermes runtime writes in the user's place (a todo snapshot, a nudge, a continuation
    marker: upstream's ``_is_real_user_message``, which grounds its task snapshot)."""
    if message.get("role") != "user" or message.get("_compressed_summary"):
        return False
    text = content_text(message)
    return bool(text.strip()) and not is_summary_text(text) and hermes_texts.is_real_user_message(message)


def focus_terms(focus: str | None) -> frozenset[str]:
    """Lowercase content words of a focus topic (stopwords and words under 3 chars dropped)."""
    if not focus:
        return frozenset()
    return frozenset(w.strip(".-") for w in _WORD.findall(focus.lower()) if w.strip(".-") not in _STOPWORDS)


def matches_focus(text: str, terms: frozenset[str]) -> bool:
    if not terms:
        return False
    lowered = text.lower()
    return any(term in lowered for term in terms)


def error_fingerprint(line: str) -> str:
    """A line's error fingerprint: lowercase, uuids, hex runs ≥ 6 and digit runs masked."""
    key = line.lower()
    for pattern, replacement in _ERROR_MASKS:
        key = pattern.sub(replacement, key)
    return " ".join(key.split())


def _sentences(text: str) -> Iterable[str]:
    for raw in _SENTENCE_SPLIT.split(text):
        sentence = raw.strip(" -*#>\t")
        if len(sentence) >= 12:
            yield sentence


def _file_op(name: str) -> str:
    lowered = name.lower()
    if is_read(name):
        return "read"
    if is_terminal(name):
        return "ran"
    if any(w in lowered for w in ("write", "create", "save")):
        return "write"
    if any(w in lowered for w in ("edit", "replace", "patch", "apply", "insert")):
        return "edit"
    if any(w in lowered for w in ("delete", "remove", "unlink")):
        return "delete"
    return lowered or "used"


def _action_verb(name: str) -> str:
    lowered = name.lower()
    if is_read(name):
        return "READ"
    if is_terminal(name):
        return "RUN"
    for needle, verb in (
        ("write", "WRITE"),
        ("create", "CREATE"),
        ("edit", "EDIT"),
        ("replace", "EDIT"),
        ("patch", "EDIT"),
        ("search", "SEARCH"),
        ("grep", "SEARCH"),
        ("glob", "SEARCH"),
        ("find", "SEARCH"),
        ("fetch", "FETCH"),
        ("web", "FETCH"),
        ("delete", "DELETE"),
    ):
        if needle in lowered:
            return verb
    return (name or "call").upper()


# --------------------------------------------------------------------------- extraction


def task_snapshot(messages: list[Message]) -> str:
    """The deterministic task snapshot: the newest real user turn in ``messages``, quoted."""
    newest = next((m for m in reversed(messages) if is_real_user(m)), None)
    if newest is None:
        return NO_USER_TURNS
    # Upstream ``_latest_user_task_snapshot``: redacted, whitespace collapsed, cut to 1,400 chars with
    # a " ...[truncated]" tail, then quoted as a Python literal (``{text!r}``).
    text = re.sub(r"\s+", " ", redact(content_text(newest).strip()))
    if len(text) > SNAPSHOT_CHARS:
        text = text[: SNAPSHOT_CHARS - 15].rstrip() + " ...[truncated]"
    return f"{SNAPSHOT_LEAD}{text!r}\n{SNAPSHOT_NOTE}"


def extract(messages: list[Message], first_index: int = 0) -> Extraction:
    """Walk ``messages`` once and collect every source's items (indices offset by ``first_index``)."""
    out: Extraction = {name: [] for name in SOURCE_ORDER}
    calls: dict[str, tuple[str, dict[str, object], int, int]] = {}  # id -> name, args, idx, action slot
    files: dict[str, Item] = {}
    errors: dict[str, Item] = {}
    identifiers: dict[str, int] = {}  # token -> index of its newest mention
    last_assistant_text: tuple[int, str] | None = None
    last_call_message: int | None = None
    open_questions: list[tuple[int, str]] = []
    snapshot_user: str | None = None

    for offset, message in enumerate(messages):
        idx = first_index + offset
        role = str(message.get("role", ""))
        text = redact(content_text(message))
        if role == "user":
            if not is_real_user(message):
                continue
            snapshot_user = text
            flat = one_line(text, 100_000)
            out["user_requests"].append(Item(f"u:{flat[:400].lower()}", f"[t{idx}] {flat}", idx))
            if not out["goal"]:
                out["goal"].append(Item("goal", flat, idx))
            constraints = _CONSTRAINT_CUES.in_text(text.lower())
            for sentence in _sentences(text):
                if constraints and _CONSTRAINT_CUES.in_sentence(sentence):
                    out["constraints"].append(Item(f"c:{sentence.lower()[:200]}", sentence, idx))
                if sentence.endswith("?"):
                    open_questions.append((idx, sentence))
            out["timeline"].append(Item(f"t:{idx}", f"[t{idx}] user: {one_line(text, 200)}", idx))
            _collect_errors(text, idx, errors)
            _collect_identifiers(text, idx, identifiers)
        elif role == "assistant":
            calls_here = tool_calls(message)
            if text.strip():
                last_assistant_text = (idx, text)
                lowered = text.lower()
                decisions = _DECISION_CUES.in_text(lowered)
                remaining = _REMAINING_CUES.in_text(lowered)
                for sentence in _sentences(text) if decisions or remaining else ():
                    if decisions and _DECISION_CUES.in_sentence(sentence):
                        out["decisions"].append(Item(f"d:{sentence.lower()[:200]}", sentence, idx))
                    if remaining and _REMAINING_CUES.in_sentence(sentence):
                        out["remaining"].append(Item(f"r:{sentence.lower()[:200]}", sentence, idx))
                if open_questions and not calls_here:
                    answer = one_line(next(iter(_sentences(text)), text), 160)
                    for q_idx, question in open_questions:
                        out["questions"].append(
                            Item(f"q:{question.lower()[:200]}", f"{one_line(question, 200)} -> {answer}", q_idx)
                        )
                    open_questions = []
                _collect_identifiers(text, idx, identifiers)
            names = []
            for call in calls_here:
                name = tool_call_name(call)
                raw_args = tool_call_arguments(call)
                args = parsed_arguments(raw_args)
                names.append(name)
                target = call_target(name, args)
                call_id = str(call.get("id") or f"{idx}:{len(names)}")
                calls[call_id] = (name, dict(args), idx, len(out["actions"]))
                out["actions"].append(
                    Item(
                        f"a:{call_id}",
                        f"{_action_verb(name)} {target or '(no target)'} — pending [tool: {name}]",
                        idx,
                    )
                )
                for path in _call_paths(args, raw_args):
                    files[path] = Item(f"f:{path}", f"{_file_op(name)} {path}", idx)
                _collect_identifiers(raw_args, idx, identifiers)
            if calls_here:
                last_call_message = idx
            label = "assistant" + (f"/{','.join(names)}" if names else "")
            shown = (
                text
                if text.strip()
                else ", ".join(f"{tool_call_name(c)}({tool_call_arguments(c)})" for c in calls_here)
            )
            out["timeline"].append(Item(f"t:{idx}", f"[t{idx}] {label}: {one_line(redact(shown), 200)}", idx))
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            known = calls.get(call_id)
            name = known[0] if known else str(message.get("name") or "tool")
            if known is not None:
                _, args, call_idx, slot = known
                verb_target = out["actions"][slot].text.split(" — ", 1)[0]
                out["actions"][slot] = Item(
                    f"a:{call_id}", f"{verb_target} — {result_outcome(text)} [tool: {name}]", call_idx
                )
            out["timeline"].append(Item(f"t:{idx}", f"[t{idx}] tool/{name}: {one_line(text, 200)}", idx))
            _collect_errors(text, idx, errors)
            _collect_identifiers(text, idx, identifiers)
        else:
            _collect_identifiers(text, idx, identifiers)

    if snapshot_user is not None or messages:
        out["snapshot"].append(Item("snapshot", task_snapshot(messages), first_index + len(messages)))
    if last_assistant_text is not None:
        idx, text = last_assistant_text
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        state = one_line(paragraphs[-1] if paragraphs else text, 600)
        out["current_state"].append(Item("state", state, idx))
    if last_call_message is not None:
        out["in_progress"] = [
            Item(f"p:{it.key}", it.text, it.order) for it in out["actions"] if it.order == last_call_message
        ]
    out["files"] = sorted(files.values(), key=lambda it: it.order)
    out["errors"] = sorted(errors.values(), key=lambda it: it.order)
    out["identifiers"] = sorted(
        (Item(f"i:{token}", token, order) for token, order in identifiers.items()), key=lambda it: it.order
    )
    return out


_PATH_ARG_KEYS = ("path", "file", "filename", "file_path", "notebook_path", "target_file", "filepath")


def path_tokens(text: str) -> list[str]:
    """Path-like tokens (``a/b/c.py``, ``./x``, ``~/y``, ``name.ext``) in ``text``, URLs excluded.

    Splits on whitespace first (C speed) and matches only tokens that can hold a path, which keeps
    long prose cheap.
    """
    found: list[str] = []
    memo = _WORD_PATHS
    for raw in _path_words(text):
        paths = memo.get(raw)
        if paths is None:
            if len(memo) >= _WORD_PATHS_MAX:
                memo.clear()
            paths = memo[raw] = _word_paths(raw)
        found.extend(paths)
    return found


def _path_words(text: str) -> list[str]:
    """``_PATH_WORD.findall(text)``: the whitespace-separated words holding a "/" or a known ".ext".

    On ASCII text each mark is found by a regex that skips to candidates, and its word's bounds by
    byte searches for the nearest whitespace on either side (the whitespace made spaces first), so
    the regex engine never tries a word start at every position (3.4x faster on coding-agent's texts,
    the same words; tests/engines/test_extractive_fast_paths.py).
    """
    if not text.isascii():
        return _PATH_WORD.findall(text)  # (``\\s`` also matches Unicode spaces)
    words: list[str] = []
    spaced: bytes | None = None
    search = _PATH_MARK.search
    position = 0
    while (mark := search(text, position)) is not None:
        if spaced is None:
            spaced = text.encode("ascii").translate(_ASCII_SPACE_TO_SPACE)
        at = mark.start()
        start = spaced.rfind(b" ", 0, at) + 1
        end = spaced.find(b" ", at)
        position = end if end >= 0 else len(text)
        words.append(text[start:position])
    return words


_WORD_PATHS: dict[str, tuple[str, ...]] = {}
"""Path tokens per word: a session names the same paths over and over (a coding session: 26,000
path-like words, 3,400 distinct), and matching one costs a backtracking regex pass."""
_WORD_PATHS_MAX = 100_000


def _word_paths(raw: str) -> tuple[str, ...]:
    if "://" in raw:
        return ()
    token = raw.strip(_TOKEN_STRIP).rstrip(".")
    if not token:
        return ()
    # Without a "/" only the extension branch can match: running it alone gives the same
    # matches without the slash branch's backtracking over every start position.
    pattern = _PATH_TOKEN if "/" in token else _EXT_TOKEN
    return tuple(map(_STRIP_PUNCTUATION, pattern.findall(token)))  # (the patterns have no groups)


def _call_paths(args: dict[str, object], raw_args: str) -> list[str]:
    paths: list[str] = []
    for key in _PATH_ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            paths.append(value.strip())
    listed = args.get("paths")
    if isinstance(listed, list):
        paths.extend(str(p) for p in listed if isinstance(p, str) and p.strip())
    if not paths:
        for key in ("command", "cmd", "pattern", "query"):
            value = args.get(key)
            if isinstance(value, str):
                paths.extend(path_tokens(value[:2000]))
    seen: dict[str, None] = {}
    for path in paths:
        seen.setdefault(path[:200], None)
    return list(seen)


def _collect_errors(text: str, idx: int, errors: dict[str, Item]) -> None:
    for fingerprint, exemplar in _ERRORS(text):
        errors.pop(fingerprint, None)
        errors[fingerprint] = Item(f"e:{fingerprint}", exemplar, idx)


def error_lines(text: str) -> tuple[tuple[str, str], ...]:
    """``(fingerprint, exemplar)`` of each error line of ``text``, each fingerprint once at its last line.

    Recording them in this order (an earlier entry of a fingerprint removed) leaves a keyed table
    as recording every error line would.
    """
    if not text:
        return ()
    # Scan line by line only when an error marker exists at all (cheap reject for the common case).
    if error_line_of(text) is None:
        return ()
    found_lines: dict[str, str] = {}
    for line in lines_that_may_report_errors(text):
        if len(line) > 2000:
            line = line[:2000]
        if ERROR_HINT.search(line) is None:
            continue  # no error hint: first_error_line would say None (one C call instead of eleven)
        found = first_error_line(line)
        if not found:
            continue
        exemplar = one_line(found, 160)
        fingerprint = error_fingerprint(exemplar)
        found_lines.pop(fingerprint, None)
        found_lines[fingerprint] = exemplar
    return tuple(found_lines.items())


def _collect_identifiers(text: str, idx: int, found: dict[str, int]) -> None:
    tokens = _IDENTIFIERS(text)
    for token in tokens:
        found.pop(token, None)
    found.update(dict.fromkeys(tokens, idx))


def identifier_tokens(text: str) -> tuple[str, ...]:
    """Identifiers and path tokens of ``text``, each once, in the order of its last occurrence.

    Recording them in this order (an earlier entry removed) leaves a keyed table as recording every
    occurrence would.
    """
    if not text:
        return ()
    found: list[str] = []
    for needle, gate, pattern in _IDENTIFIER_PATTERNS:
        if needle and needle not in text:
            continue  # a substring check is far cheaper than a regex pass over long text
        if gate is not None and not gate(text):
            continue
        tokens = list(map(_STRIP_PUNCTUATION, pattern.findall(text)))  # (the patterns have no groups)
        found += compress(tokens, map(_LONGER_THAN_ONE, map(len, tokens)))
    found += path_tokens(text)
    # Each token at its last occurrence, at C speed: the first occurrences of the reversed list.
    return tuple(reversed(dict.fromkeys(reversed(found))))


_STRIP_PUNCTUATION = methodcaller("rstrip", ".,;:")
_LONGER_THAN_ONE = (1).__lt__


# A compaction extracts its whole span again and spans overlap (the next compaction summarises the
# previous summary's tail rows plus new ones): each distinct text is scanned once per process.
_ERRORS = TextMemo(error_lines)
_IDENTIFIERS = TextMemo(identifier_tokens)


# --------------------------------------------------------------------------- previous summaries


def parse_summary(text: str) -> list[tuple[str, list[str]]]:
    """A rendered summary as ``[(heading, lines)]`` (bullets and numbering removed, "None." dropped).

    Lines before the first heading are returned under the heading ``""``.
    """
    sections: list[tuple[str, list[str]]] = [("", [])]
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
            continue
        if not line or line.startswith("# "):
            continue
        line = re.sub(r"^(?:[-*•]\s+|\d+\.\s+)", "", line)
        if line in ("None.", "None", NO_USER_TURNS):
            continue
        sections[-1][1].append(line)
    return [s for s in sections if s[0] or s[1]]


def previous_items(previous: str, template: SummaryTemplate, merge_mode: str) -> Extraction:
    """A previous summary's lines as items of the template's sources, older than anything new."""
    out: Extraction = {}
    parsed = parse_summary(previous)
    total = sum(len(lines) for _, lines in parsed)
    position = 0
    for heading, lines in parsed:
        spec = template.section_for_heading(heading) if heading else None
        source = spec.source if spec is not None else template.fallback_source
        for line in lines:
            position += 1
            text = line
            if merge_mode == "regenerate":
                text = one_line(text, REGENERATE_LINE_CHARS)
            # Orders below zero keep carried items older than every new one, in their old order.
            out.setdefault(source, []).append(Item(f"prev:{text.lower()}", text, position - total - 1))
    return out


def merge_extractions(older: Extraction, newer: Extraction, template: SummaryTemplate) -> Extraction:
    """Anchored merge: per source a keyed set, newer items replace equal keys and come last."""
    merged: Extraction = {}
    singles = {s.source: s.single for s in template.sections}
    for source in set(older) | set(newer):
        old_items, new_items = older.get(source, []), newer.get(source, [])
        mode = singles.get(source)
        if mode == "first":
            merged[source] = (old_items or new_items)[:1]
            continue
        if mode == "last":
            merged[source] = (new_items or old_items)[-1:]
            continue
        by_key: dict[str, Item] = {}
        for item in [*old_items, *new_items]:
            plain = _plain_key(item)
            by_key.pop(plain, None)
            by_key[plain] = item
        merged[source] = list(by_key.values())
    return merged


def _plain_key(item: Item) -> str:
    # Carried lines are keyed by their text; new items by their text too when merging, so a line
    # extracted again after being carried does not appear twice.
    return " ".join(item.text.lower().split())


# --------------------------------------------------------------------------- rendering


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def render(
    items: Extraction,
    template: SummaryTemplate,
    budget_tokens: int,
    *,
    focus_topic: str | None = None,
    auto_focus: str | None = None,
) -> str:
    """Lay ``items`` out under ``template`` within ``budget_tokens`` (rough tokens, chars / 4).

    Trimming: section caps (``max_items``, ``share``) first; with an explicit ``focus_topic``,
    non-matching items are held to ``1 − FOCUS_SHARE`` of the budget; then items are dropped by
    ascending ``trim_rank``, oldest first, focus-matching items last. Untrimmable sections are
    hard-cut only if the rest cannot make room.
    """
    budget_chars = max(200, int(budget_tokens) * 4)
    terms = focus_terms(focus_topic)
    soft_terms = terms | focus_terms(auto_focus)
    chosen: list[tuple[SectionSpec, list[tuple[Item, str, bool]]]] = []
    for spec in template.sections:
        source_items = sorted(items.get(spec.source, []), key=lambda it: it.order)
        if spec.max_items is not None and len(source_items) > spec.max_items:
            source_items = source_items[-spec.max_items :]
        rows = [(it, _cut(it.text, spec.item_chars), matches_focus(it.text, soft_terms)) for it in source_items]
        chosen.append((spec, rows))

    def cost(line: str) -> int:
        return len(line) + 6  # bullet/number and newline

    header_chars = sum(len(spec.heading) + 5 + 6 for spec, _ in chosen)  # "## h\n" + a possible "None."
    alive: dict[int, set[int]] = {i: set(range(len(rows))) for i, (_, rows) in enumerate(chosen)}

    # Per-section share caps: drop a capped section's oldest, non-focus items first.
    for i, (spec, rows) in enumerate(chosen):
        if spec.share is None:
            continue
        cap = int(spec.share * budget_chars)
        used = sum(cost(rows[j][1]) for j in alive[i])
        for j in sorted(alive[i], key=lambda j: (rows[j][2], rows[j][0].order)):
            if used <= cap:
                break
            alive[i].discard(j)
            used -= cost(rows[j][1])

    def total() -> int:
        return header_chars + sum(cost(chosen[i][1][j][1]) for i in alive for j in alive[i])

    queue = sorted(
        (
            (rows[j][2], spec.trim_rank, rows[j][0].order, i, j)
            for i, (spec, rows) in enumerate(chosen)
            if spec.trim_rank is not None
            for j in alive[i]
        ),
    )
    used = total()
    if terms:
        # An explicit focus gets most of the budget: hold the rest to the remaining share.
        strict = [(matches_focus(chosen[i][1][j][0].text, terms), r, o, i, j) for _, r, o, i, j in queue]
        non_focus = sum(cost(chosen[i][1][j][1]) for f, _, _, i, j in strict if not f)
        has_focus = any(f for f, *_ in strict)
        limit = int((1 - FOCUS_SHARE) * budget_chars)
        if has_focus:
            for f, _, _, i, j in sorted(strict):
                if f or non_focus <= limit:
                    break
                alive[i].discard(j)
                non_focus -= cost(chosen[i][1][j][1])
                used -= cost(chosen[i][1][j][1])
    for _, _, _, i, j in queue:
        if used <= budget_chars:
            break
        if j in alive[i]:
            alive[i].discard(j)
            used -= cost(chosen[i][1][j][1])

    lines: list[str] = []
    for i, (spec, rows) in enumerate(chosen):
        lines.append(f"## {spec.heading}")
        kept = [rows[j] for j in sorted(alive[i], key=lambda j: rows[j][0].order)]
        if spec.newest_first:
            kept.reverse()
        if not kept:
            lines.append("None.")
        for n, (_, text, _) in enumerate(kept, start=1):
            if "\n" in text:
                text = "\n  ".join(text.splitlines())
            lines.append(f"{n}. {text}" if spec.numbered else f"- {text}")
        lines.append("")
    body = "\n".join(lines).rstrip() + "\n"
    if len(body) > budget_chars:
        body = body[: max(0, budget_chars - 20)].rstrip() + "\n...[truncated]\n"
    return body


# --------------------------------------------------------------------------- the summarizer


class ExtractiveSummarizer:
    """Deterministic offline summaries: :func:`extract` + :func:`render`, merged with a previous one."""

    name = "extractive"

    def summarize(self, request: SummaryRequest) -> str:
        """The summary body for ``request`` (never raises :class:`SummaryFailure`)."""
        fresh = extract(request.turns, request.first_index)
        if request.previous_summary:
            carried = previous_items(request.previous_summary, request.template, request.merge_mode)
            fresh = merge_extractions(carried, fresh, request.template)
        return render(
            fresh,
            request.template,
            request.budget_tokens,
            focus_topic=request.focus_topic,
            auto_focus=request.auto_focus,
        )
