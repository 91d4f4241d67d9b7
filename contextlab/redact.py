"""Secret redaction, as the host applies it to everything a summary quotes.

The host runs ``agent/redact.py`` ``redact_sensitive_text`` (default flags: not a code file, not a
file read, URL credentials left alone; redaction on, its default) over each message it serialises
for the summarizer, over tool-call arguments, over the deterministic task snapshot and over the
summary it writes. This module is our implementation of the behaviour of hermes-agent 0.19.0's rules
(``docs/compressor.md``, *Secret redaction*), checked string for string against the real function
(``tests/hermes/test_real_host.py``). In order, on the text as the previous rule left it:

1. Provider key prefixes (``sk-``, ``ghp_``, ``AKIA`` ... :data:`_PREFIXED_KEYS`), masked.
2. Upper-case ``NAME=value`` assignments whose name holds KEY, TOKEN, SECRET, PASSWORD, PASSWD,
   CREDENTIAL or AUTH (``SECRET_KEY='x'`` -> ``SECRET_KEY='***'``); then, in a text without ``://``,
   dotted config keys (``spring.datasource.password=x``) and line-initial ones (``export api_key=x``).
3. JSON fields (``"apiKey": "x"``), then YAML-style ``password: x`` at a line start.
4. ``Authorization:`` and API-key headers, Telegram bot tokens, private key blocks.
5. In a text with ``://``: database connection-string passwords and bare-token URL userinfo.
6. JWTs, whole form bodies (``a=1&token=x``) and E.164 phone numbers.

A value whose text is an environment lookup (``os.getenv(...)``, ``process.env.X``) is code, not a
secret, and is kept. Masks: a value under 18 characters becomes ``***``, a longer one keeps its first
6 and last 4 characters (``sk-pro...wxyz``). Each rule runs only when the host's own substring gate
lets it (``"=" in text`` ...); a stricter gate of ours, a keyword every match must hold (found in the
text lower-cased by :func:`folded`), skips most regex scans, and the patterns that backtrack are
tried only where a match can start. ``tests/engines/test_redact.py`` compares each of these fast
paths with the plain whole-text passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter

import ahocorasick_rs

from contextlab.textmemo import TextMemo

# --------------------------------------------------------------------------- masks

_SHORT_SECRET = 18
"""Values shorter than this are masked whole; longer ones keep a head and a tail for debugging."""


def mask(value: str) -> str:
    """The host's log mask of one secret value: ``***``, or its first 6 and last 4 characters."""
    if len(value) < _SHORT_SECRET:
        return "***"
    return f"{value[:6]}...{value[-4:]}"


# --------------------------------------------------------------------------- rule texts

_ALNUM = "A-Za-z0-9"


def _keys(prefixes: str, body: str) -> list[tuple[str, str]]:
    return [(prefix, body) for prefix in prefixes.split()]


_PREFIXED_KEYS: tuple[tuple[str, str], ...] = (
    # (literal prefix, the key body after it). Alternatives whose prefixes differ cannot match at the
    # same place, so their order is free, but for the one family where a prefix starts another:
    # Stripe's sk_live_ and sk_test_ are tried before ElevenLabs' sk_, as the host tries them.
    # GitHub, Perplexity, Firecrawl, Stripe, Hugging Face, Replicate, npm, DigitalOcean, Tavily, Exa,
    # Groq, Matrix, RetainDB, Hindsight, Mem0, ByteRover, Notion:
    *_keys(
        "ghp_ gho_ ghu_ ghs_ ghr_ pplx- fc- sk_live_ sk_test_ rk_live_ hf_ r8_ npm_ dop_v1_ doo_v1_ tvly- exa_ "
        "gsk_ syt_ retaindb_ hsk- mem0_ brv_ ntn_",
        f"[{_ALNUM}]{{10,}}",
    ),
    # OpenAI / OpenRouter / Anthropic, Fal.ai, BrowserBase, SendGrid, PyPI, AgentMail:
    *_keys("sk- fal_ bb_live_ SG. pypi- am_", f"[{_ALNUM}_-]{{10,}}"),
    *_keys("github_pat_ sk_", f"[{_ALNUM}_]{{10,}}"),  # GitHub fine-grained, ElevenLabs
    *_keys("xai- fw- fw_ fpk_", f"[{_ALNUM}]{{30,}}"),  # xAI, Fireworks
    ("AIza", f"[{_ALNUM}_-]{{30,}}"),  # Google
    ("gAAAA", f"[{_ALNUM}_=-]{{20,}}"),  # Codex encrypted content
    ("AKIA", "[A-Z0-9]{16}"),  # AWS access key id
    ("xapp-", rf"\d+-[{_ALNUM}-]{{10,}}"),  # Slack
    ("xox", f"[baprs]-[{_ALNUM}-]{{10,}}"),
)
"""Provider API keys the host recognises by their prefix (hermes-agent 0.19.0 ``_PREFIX_PATTERNS``)."""

_KEY_EDGE = f"{_ALNUM}_-"
_PREFIXED_KEY = re.compile(
    f"(?<![{_KEY_EDGE}])("
    + "|".join(re.escape(prefix) + body for prefix, body in _PREFIXED_KEYS)
    + f")(?![{_KEY_EDGE}])"
)
_KEY_PREFIXES = ahocorasick_rs.AhoCorasick([prefix for prefix, _body in _PREFIXED_KEYS])
"""Any prefixed key holds its literal prefix: one pass finds whether the rule can match."""

_ENV_WORDS = "API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH"
_ENV_ASSIGNMENT = re.compile(rf"([A-Z0-9_]{{0,50}}(?:{_ENV_WORDS})[A-Z0-9_]{{0,50}})\s*=\s*(['\"]?)(\S+)\2")
"""An upper-case name with a secret word, ``=`` (spaces allowed around it) and a value, quoted or not."""
_ENV_KEYWORDS = ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH")
"""Case-sensitive: every :data:`_ENV_ASSIGNMENT` name holds one."""
_ENV_KEYWORD_FINDER = ahocorasick_rs.AhoCorasick(_ENV_KEYWORDS)

_CONFIG_WORDS = r"api[ _.\-]?key|token|secret|passwd|password|credential|auth"
_CONFIG_VALUE = r"(['\"]?)([^\s&]+?)\2(?=[\s&]|$)"
"""A value up to white space or ``&`` (a form body is read pair by pair), in matching quotes or none."""
_KEY_RUN = r"[A-Za-z0-9_.\-]"
_DOTTED_CONFIG = re.compile(
    rf"((?:[A-Za-z0-9_\-]+\.)+{_KEY_RUN}*(?:{_CONFIG_WORDS}){_KEY_RUN}*"
    rf"|{_KEY_RUN}*(?:{_CONFIG_WORDS}){_KEY_RUN}*\.{_KEY_RUN}+)={_CONFIG_VALUE}",
    re.IGNORECASE,
)
"""A namespaced config key with a secret word anywhere in its path (``app.api.key=x``)."""
_LINE_CONFIG = re.compile(
    rf"(^[ \t]*(?:export[ \t]+)?[A-Za-z0-9_\-]*(?:{_CONFIG_WORDS})[A-Za-z0-9_\-]*)={_CONFIG_VALUE}",
    re.IGNORECASE | re.MULTILINE,
)
"""A bare secret key at a line start (``password=x``, ``export API_KEY=x``), never mid-sentence."""
_CONFIG_KEYWORDS = ("key", "token", "secret", "passw", "credential", "auth")
"""Lower case: every config rule's key holds one."""

_JSON_WORDS = (
    "api_?[Kk]ey|token|secret|password|access_token|refresh_token|auth_token|bearer"
    "|secret_value|raw_secret|secret_input|key_material"
)
_JSON_FIELD = re.compile(rf'("(?:{_JSON_WORDS})")\s*:\s*"([^"]+)"', re.IGNORECASE)
_JSON_KEYWORDS = ("key", "token", "secret", "password", "bearer")

_YAML_WORDS = r"api[ _.\-]?key|token|secret|passwd|password|credential"
_YAML_FIELD = re.compile(
    rf"(^[ \t]*{_KEY_RUN}*(?:{_YAML_WORDS}){_KEY_RUN}*)(:[ \t]*)(?!['\"])([^\s&]+)",
    re.IGNORECASE | re.MULTILINE,
)
"""``password: x`` with the secret word in the key at a line start; a quoted value is JSON's."""
_YAML_KEYWORDS = ("key", "token", "secret", "passw", "credential")

_ENV_LOOKUP = re.compile(r"(?:os\.(?:getenv|environ)|process\.env|\$ENV\{)")
"""A value that starts like this reads a variable by name: code, not a leaked secret."""

_AUTHORIZATION = re.compile(r"((?:Proxy-)?Authorization:\s*)([A-Za-z][\w.+-]*\s+)?([^\s\"']+)", re.IGNORECASE)
_HEADER_NAMES = "x-api-key|x-goog-api-key|api-key|apikey|x-api-token|x-auth-token|x-access-token"
_KEY_HEADER = re.compile(rf"((?:{_HEADER_NAMES})\s*:\s*)(\S+)", re.IGNORECASE)
_HEADER_KEYWORDS = ("api-key", "apikey", "x-api-token", "x-auth-token", "x-access-token")
_TELEGRAM = re.compile(r"(bot)?(\d{8,}):([-A-Za-z0-9_]{30,})")
_PRIVATE_KEY = re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----")
_DATABASE_URL = re.compile(
    r"((?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp)://[^:\s]+:)([^@\s]+)(@)", re.IGNORECASE
)
_DATABASE_SCHEMES = ("postgres", "mysql://", "mongodb", "redis://", "amqp://")
_URL_TOKEN = re.compile(r"((?:https?|wss?|git|ssh|ftp|ftps|sftp)://)([^\s:@/]{8,})(@\S+)", re.IGNORECASE)
"""``https://TOKEN@host``: a bare credential as the userinfo (``user:pass@`` is left alone)."""
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_=-]{4,}){0,2}")
_FORM_BODY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*=[^&\s]*(?:&[A-Za-z_][A-Za-z0-9_.-]*=[^&\s]*)+")
_FORM_SECRETS = frozenset(
    {
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "api_key",
        "apikey",
        "client_secret",
        "password",
        "auth",
        "jwt",
        "session",
        "secret",
        "key",
        "code",
        "signature",
        "x-amz-signature",
    }
)
"""Form fields whose value is masked, by exact lower-case name (``token_count`` is not one)."""
_PHONE = re.compile(r"(\+[1-9]\d{6,14})(?![A-Za-z0-9])")


# --------------------------------------------------------------------------- replacements


def _assignment(match: re.Match[str]) -> str:
    name, quote, value = match.group(1, 2, 3)
    if _ENV_LOOKUP.match(value):
        return match.group(0)
    return f"{name}={quote}{mask(value)}{quote}"


def _json_field(match: re.Match[str]) -> str:
    key, value = match.group(1, 2)
    return match.group(0) if _ENV_LOOKUP.match(value) else f'{key}: "{mask(value)}"'


def _yaml_field(match: re.Match[str]) -> str:
    key, separator, value = match.group(1, 2, 3)
    return match.group(0) if _ENV_LOOKUP.match(value) else f"{key}{separator}{mask(value)}"


def _phone(match: re.Match[str]) -> str:
    number = match.group(1)
    keep = 2 if len(number) <= 8 else 4
    return f"{number[:keep]}****{number[-keep:]}"


def _form_body(text: str) -> str:
    """A text that is one form body (``k=v&k=v``, one line) with its secret fields masked; it is
    returned stripped of outer white space, as the host does."""
    if "\n" in text:
        return text
    body = text.strip()
    if _FORM_BODY.fullmatch(body) is None:
        return text
    pairs = []
    for pair in body.split("&"):
        name, equals, _value = pair.partition("=")
        pairs.append(f"{name}=***" if equals and name.lower() in _FORM_SECRETS else pair)
    return "&".join(pairs)


# --------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class _Rule:
    """One redaction pass: ``apply`` runs when ``host_gate`` holds on the current text (the host's
    condition) and its :func:`folded` form holds one of ``keywords`` (a condition every match of a
    case-insensitive pattern meets; empty: none)."""

    host_gate: Callable[[str], bool]
    apply: Callable[[str], str]
    keywords: tuple[str, ...] = ()


def folded(text: str) -> str:
    """``text`` lower-cased so that an ASCII keyword a case-insensitive pattern matches in it is a
    plain substring of the result. ``str.lower`` leaves two characters such a pattern matches to an
    ASCII letter non-ASCII, the dotless i and the long s (the Kelvin sign and the dotted capital I
    lower to ``k`` and ``i``): the whole list, found by trying every code point."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return lowered.replace("\u0131", "i").replace("\u017f", "s")


def _sub(pattern: re.Pattern[str], replacement: Callable[[re.Match[str]], str] | str) -> Callable[[str], str]:
    return lambda text: pattern.sub(replacement, text)


def _config_assignments(text: str) -> str:
    """Dotted config keys, then line-initial ones; the host skips both in a text holding a URL."""
    if "://" in text:
        return text
    return _on_key_lines(_dotted_keys(text), "=", _CONFIG_KEYWORDS, lambda line: _LINE_CONFIG.sub(_assignment, line))


def _dotted_keys(text: str) -> str:
    """What ``_DOTTED_CONFIG.sub(_assignment, text)`` gives, with the pattern tried only where a
    match can start: in the run of key characters right before an ``=`` (a key is such a run's tail),
    when that run holds a dot and a secret word. The pattern nests repeats, and a whole-text pass
    backtracks through every other run: 7.3 s over the 15 M characters of the recorded transcripts
    and datasets, and 149 s for a per-line pass over one 4,000-character line of dotted names.
    Positions are tried left to right from where the previous match ended, as the whole-text pass
    tries them."""
    pieces: list[str] = []
    copied = resume = 0
    equals = text.find("=")
    while equals >= 0:
        start = equals
        while start > 0 and text[start - 1] in _KEY_CHARACTERS:
            start -= 1
        run = text[start:equals]
        if equals > resume and "." in run and _keyword_in(folded(run), _CONFIG_KEYWORDS):
            for at in range(max(start, resume), equals):
                found = _DOTTED_CONFIG.match(text, at)
                if found is not None:
                    pieces += [text[copied:at], _assignment(found)]
                    copied = resume = found.end()
                    break
        equals = text.find("=", max(equals + 1, resume))
    return "".join(pieces) + text[copied:] if pieces else text


def _on_key_lines(text: str, separator: str, keywords: tuple[str, ...], apply: Callable[[str], str]) -> str:
    """``apply`` (a pass whose matches are line-initial keys, never holding a line break) run on the
    lines of ``text`` that hold one of ``keywords`` before their first ``separator``, as such a key
    needs (it runs from the line start to that separator); the other lines are left as they are.
    A text whose lower-cased form is not as long (a few non-ASCII letters) gets the pass whole."""
    lowered = folded(text)
    if len(lowered) != len(text):
        return apply(text) if _key_line_spans(lowered, separator, keywords) else text
    spans = _key_line_spans(lowered, separator, keywords)
    if not spans:
        return text
    pieces, done = [], 0
    for start, end in sorted(spans):
        pieces += [text[done:start], apply(text[start:end])]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _key_line_spans(lowered: str, separator: str, keywords: tuple[str, ...]) -> set[tuple[int, int]]:
    """``(start, end)`` of each line of ``lowered`` holding one of ``keywords`` (letters) before its
    first ``separator``."""
    spans: set[tuple[int, int]] = set()
    for keyword in keywords:
        at = lowered.find(keyword)
        while at >= 0:
            line_end = lowered.find("\n", at)
            if line_end < 0:
                line_end = len(lowered)
            line_start = lowered.rfind("\n", 0, at) + 1
            if lowered.find(separator, line_start, line_end) > at:
                spans.add((line_start, line_end))
            at = lowered.find(keyword, line_end)  # the line is decided: on to the next one
    return spans


_USERINFO_TOKEN = re.compile(r"[^\s:@/]{8,}@")


def _token_after_scheme(text: str) -> bool:
    """Whether some ``://`` is followed by a bare token and ``@``, as a URL-token match needs."""
    at = text.find("://")
    while at >= 0:
        if _USERINFO_TOKEN.match(text, at + 3) is not None:
            return True
        at = text.find("://", at + 3)
    return False


def _yaml_fields(text: str) -> str:
    """``password: x`` keys at line starts; the host skips them in a text holding a URL."""
    if "://" in text:
        return text
    return _on_key_lines(text, ":", _YAML_KEYWORDS, lambda line: _YAML_FIELD.sub(_yaml_field, line))


def _prefixed_keys(text: str) -> str:
    """Provider keys masked, the pattern tried only where one of their prefixes starts (a match
    starts with its prefix literal; tried in position order as a whole-text pass would, its
    look-behind reading the text before)."""
    starts = sorted({start for _index, start, _end in _KEY_PREFIXES.find_matches_as_indexes(text, overlapping=True)})
    pieces, done = [], 0
    for start in starts:
        if start < done:
            continue  # inside a key already masked
        found = _PREFIXED_KEY.match(text, start)
        if found is not None:
            pieces += [text[done:start], mask(found[1])]
            done = found.end()
    return "".join(pieces) + text[done:] if pieces else text


_KEY_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-\u0130\u0131\u017f\u212a"
"""What ``[A-Za-z0-9_.\\-]`` matches case-insensitively: the ASCII ones and four more (:func:`folded`)."""


def _keyword_in(text: str, keywords: tuple[str, ...]) -> bool:
    return any(keyword in text for keyword in keywords)


_TELEGRAM_COLON = re.compile(r":(?<=\d{8}:)[-A-Za-z0-9_]{30}")
"""A colon after eight digits and before 30 token characters, as a bot token needs: led by a literal,
so the scan jumps from colon to colon (the token pattern itself tries every position, 10 times slower)."""


_ENV_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"


def _env_name_before_equals(text: str) -> bool:
    """Whether some ``=`` follows (past white space) a run of upper-case name characters holding a
    secret word, as an assignment match needs (its name is that run's tail)."""
    if "=" not in text or not _ENV_KEYWORD_FINDER.find_matches_as_indexes(text):
        return False
    for part in text.split("=")[:-1]:
        if not _keyword_in(part, _ENV_KEYWORDS):
            continue
        name = part.rstrip()
        if _keyword_in(name[len(name.rstrip(_ENV_NAME_CHARACTERS)) :], _ENV_KEYWORDS):
            return True
    return False


_RULES: tuple[_Rule, ...] = (
    _Rule(lambda text: True, _prefixed_keys),
    _Rule(_env_name_before_equals, _sub(_ENV_ASSIGNMENT, _assignment)),
    _Rule(lambda text: "=" in text, _config_assignments, _CONFIG_KEYWORDS),
    _Rule(lambda text: ":" in text and '"' in text, _sub(_JSON_FIELD, _json_field), _JSON_KEYWORDS),
    _Rule(lambda text: ":" in text, _yaml_fields),
    _Rule(
        lambda text: "uthorization" in text or "UTHORIZATION" in text,
        _sub(_AUTHORIZATION, lambda m: m[1] + (m[2] or "") + mask(m[3])),
    ),
    _Rule(lambda text: ":" in text, _sub(_KEY_HEADER, lambda m: m[1] + mask(m[2])), _HEADER_KEYWORDS),
    _Rule(lambda text: _TELEGRAM_COLON.search(text) is not None, _sub(_TELEGRAM, lambda m: f"{m[1] or ''}{m[2]}:***")),
    _Rule(lambda text: "BEGIN" in text and "-----" in text, _sub(_PRIVATE_KEY, "[REDACTED PRIVATE KEY]")),
    # Both need an "@" after the scheme (the host gates on "://" alone).
    _Rule(
        lambda text: "://" in text and "@" in text, _sub(_DATABASE_URL, lambda m: f"{m[1]}***{m[3]}"), _DATABASE_SCHEMES
    ),
    _Rule(_token_after_scheme, _sub(_URL_TOKEN, lambda m: m[1] + mask(m[2]) + m[3])),
    _Rule(lambda text: "eyJ" in text, _sub(_JWT, lambda m: mask(m[0]))),
    _Rule(lambda text: "&" in text and "=" in text, _form_body),
    _Rule(lambda text: "+" in text, _sub(_PHONE, _phone)),
)
"""The host's passes, in its order (each reads the text the previous one left)."""


def redact(text: str) -> str:
    """``text`` with API keys, tokens, passwords, credentials and phone numbers masked, as the host
    masks what it summarises."""
    if not text:
        return text
    # Every compaction redacts its whole span again, and spans overlap: a text is scanned once.
    return _REDACTED(text)


def redact_uncached(text: str) -> str:
    """:func:`redact` computed afresh (what its memo remembers): every rule in turn."""
    if not text:
        return text
    present: set[int] | None = None  # the keywords the current text holds, when a gate needs them
    for rule in _RULES:
        if not rule.host_gate(text):
            continue
        if rule.keywords:
            if present is None:
                # One pass for every rule's keywords (overlapping: "password" holds "passw").
                present = set(
                    map(itemgetter(0), _KEYWORD_FINDER.find_matches_as_indexes(folded(text), overlapping=True))
                )
            if present.isdisjoint(_KEYWORD_IDS[id(rule)]):
                continue
        changed = rule.apply(text)
        if changed != text:
            text, present = changed, None
    return text


_KEYWORDS = sorted({keyword for rule in _RULES for keyword in rule.keywords})
_KEYWORD_FINDER = ahocorasick_rs.AhoCorasick(_KEYWORDS)
_KEYWORD_IDS = {id(rule): frozenset(map(_KEYWORDS.index, rule.keywords)) for rule in _RULES}
_REDACTED = TextMemo(redact_uncached)
