"""The host's redaction done the plain way: its passes in its order behind its own substring gates,
each pattern run over the whole text (what :mod:`contextlab.redact` computes
with its keyword gates, line-initial passes, dotted keys tried before an ``=`` and prefix hits;
``tests/hermes`` compares both with the host)."""

from __future__ import annotations

from contextlab import redact as R


def plain_redact(text: str) -> str:
    if not text:
        return text
    if any(prefix in text for prefix, _body in R._PREFIXED_KEYS):
        text = R._PREFIXED_KEY.sub(lambda m: R.mask(m[1]), text)
    if "=" in text:
        text = R._ENV_ASSIGNMENT.sub(R._assignment, text)
        if "://" not in text:
            text = R._DOTTED_CONFIG.sub(R._assignment, text)
            text = R._LINE_CONFIG.sub(R._assignment, text)
    if ":" in text and '"' in text:
        text = R._JSON_FIELD.sub(R._json_field, text)
    if ":" in text and "://" not in text:
        text = R._YAML_FIELD.sub(R._yaml_field, text)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = R._AUTHORIZATION.sub(lambda m: m[1] + (m[2] or "") + R.mask(m[3]), text)
    if ":" in text:
        text = R._KEY_HEADER.sub(lambda m: m[1] + R.mask(m[2]), text)
        text = R._TELEGRAM.sub(lambda m: f"{m[1] or ''}{m[2]}:***", text)
    if "BEGIN" in text and "-----" in text:
        text = R._PRIVATE_KEY.sub("[REDACTED PRIVATE KEY]", text)
    if "://" in text:
        text = R._DATABASE_URL.sub(lambda m: f"{m[1]}***{m[3]}", text)
        text = R._URL_TOKEN.sub(lambda m: m[1] + R.mask(m[2]) + m[3], text)
    if "eyJ" in text:
        text = R._JWT.sub(lambda m: R.mask(m[0]), text)
    if "&" in text and "=" in text:
        text = R._form_body(text)
    if "+" in text:
        text = R._PHONE.sub(R._phone, text)
    return text


# Pieces that make each rule match, nearly match, or be gated out, with the characters a
# case-insensitive pattern folds onto ASCII letters (dotless i, long s, Kelvin sign, dotted I).
PIECES: list[str] = [
    *" \t\n\n:=&+@\"'./-_",
    "sk-proj-abcdefghijklmnopqrstu",
    "sk-short",
    "ghp_" + "a" * 22,
    "AKIA" + "B" * 16,
    "xoxb-1234567890ab",
    "SG.abcdefghijkl",
    "xapp-1-ABCDEFGHIJKL",
    "SECRET_KEY",
    "AUTHENTICATION_BACKENDS",
    "MY_API_KEY",
    "TOKEN",
    "os.getenv('X')",
    "process.env.X",
    "spring.datasource.password",
    "app.api.key",
    "export ",
    "api_key",
    "password",
    "pa\u017fsword",
    "\u0130",
    "\u212aey",
    "toke\u0131",
    '"apiKey"',
    '"token": "abcdefghijklmnopqrstuvwx"',
    "Authorization: Bearer abcdefghijklmnopqrst",
    "authorization: ",
    "x-api-key: ",
    "X-Auth-Token:",
    "bot123456789:",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "postgres://user:",
    "https://",
    "ghtoken1234",
    "@github.com/x",
    "eyJhbGciOiJIUzI1NiJ9",
    ".eyJzdWIiOiIxIn0",
    "a=1&token=x&b=2",
    "+14155550123",
    "value12345678",
    "hunter22",
    "'quoted'",
]

CASES: list[tuple[str, str]] = [
    ("key sk-proj-abcdefghijklmnopqrstu end", "key sk-pro...rstu end"),
    ("settings(SECRET_KEY='secret', DEBUG=1)", "settings(SECRET_KEY='***', DEBUG=1)"),
    # At a line start the config pass reads the masked value again, quotes and comma included.
    ("SECRET_KEY='secret',", "SECRET_KEY=***"),
    ("AUTHENTICATION_BACKENDS == ['x']", "AUTHENTICATION_BACKENDS=*** ['x']"),
    ("run MY_API_KEY=abcdefghijklmnopqrstuvwxyz now", "run MY_API_KEY=abcdef...wxyz now"),
    ("TOKEN=os.getenv('TOKEN')", "TOKEN=os.getenv('TOKEN')"),  # code reading a variable
    ("spring.datasource.password=hunter22", "spring.datasource.password=***"),
    ("export api_key=abc\nI said password=abc", "export api_key=***\nI said password=abc"),
    ('{"apiKey": "abcdef"}', '{"apiKey": "***"}'),
    ("  password: hunter22", "  password: ***"),
    ("note: secret meeting", "note: secret meeting"),  # the word is in the value, not the key
    ("Authorization: Bearer abcdefghijklmnopqrstu", "Authorization: Bearer abcdef...rstu"),
    ("x-api-key: abc", "x-api-key: ***"),
    ("bot1234567890:" + "A" * 30, "bot1234567890:***"),
    ("-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----", "[REDACTED PRIVATE KEY]"),
    ("postgres://app:hunter22@db:5432", "postgres://app:***@db:5432"),
    ("git remote https://ghtoken1234@github.com/x", "git remote https://***@github.com/x"),
    ("https://user:pass@example.com", "https://user:pass@example.com"),  # user:pass is left alone
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", "eyJhbG...xIn0"),
    (" a=1&token=abc&b=2 ", "a=1&token=***&b=2"),  # a whole form body, stripped as the host does
    ("call +14155550123 now", "call +141****0123 now"),
    ("nothing to hide here, 12 tokens", "nothing to hide here, 12 tokens"),
]
"""Texts and what the host makes of them, a case per rule (and the cases it leaves alone)."""
