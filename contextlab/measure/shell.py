"""Files a shell command reads, edits or creates: the artifact trail of agents that work through a shell.

Claude Code's ``Bash``, Codex's ``shell`` and OpenHands' ``execute_bash`` take a command string, and
mini-swe-agent writes one fenced ``bash`` block per turn instead of a tool call. The rules are
deliberately narrow (``docs/metrics.md`` §Artifacts): a path counts only where the command's own
syntax makes it a file operand, so an argument that merely looks like a path (a grep pattern, a URL)
does not become an artifact.

* read: operands of ``cat``, ``head``, ``tail``, ``nl``, ``less``, ``more``, and of ``sed`` without
  ``-i`` (after its script); ``<`` redirections.
* edit: operands of ``sed -i`` (after its script), ``>>`` redirections.
* create: ``>`` redirections (including ``cat > f <<EOF``), operands of ``touch`` and ``tee``, the
  destination of ``cp``.

Lines are split into tokens as ``shlex`` splits them (:func:`shell_tokens`); heredoc bodies are
skipped, and a line that cannot be split (an unbalanced quote) yields nothing.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

ArtifactOp = str
"""``read``, ``edit`` or ``create`` (``contextlab.measure.targets.artifact_op``'s words)."""

_READERS = frozenset({"cat", "head", "tail", "nl", "less", "more"})
_CREATORS = frozenset({"touch", "tee"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")"})
_REDIRECTS = {">": "create", ">|": "create", ">>": "edit", "<": "read", "&>": "create"}
_WRAPPERS = frozenset({"sudo", "command", "time", "nohup", "xargs"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_FILE_NAME = re.compile(r"^[\w.@+~-]+\.\w{1,10}$")
_HEREDOC = re.compile(r"(?<!<)<<-?(?!<)\s*(['\"]?)([\w.-]+)\1")
_FENCE = re.compile(r"```(?:bash|sh|shell|console)?[ \t]*\n(.*?)```", re.S)
_OPERAND_PROGRAMS = _READERS | _CREATORS | {"cp", "sed"}
"""Every program whose operands :func:`_operands` reads (the pre-check :func:`_may_name_artifacts`
passes over a line naming none of them, so a program added there is added here)."""
_PROGRAM_WORD = re.compile(r"(?:^|[\s;&|()<>/])(?:" + "|".join(sorted(_OPERAND_PROGRAMS)) + ")")
"""Where a word naming a program with file operands may start, once quotes and backslashes are gone."""
_QUOTING = str.maketrans("", "", "'\"\\")
_SHELL_TOKEN = re.compile(
    r"[ \t]*(?:(#.*)|([();<>|&]+)|((?:[^ \t();<>|&#'\"\\]|\\.|'[^']*'|\"(?:[^\"\\]|\\.)*\")+))", re.S
)
"""Blanks, then a comment, a run of operator characters or a word (:func:`shell_tokens`)."""
_WORD_PART = re.compile(r"\\(.)|'([^']*)'|\"((?:[^\"\\]|\\.)*)\"|([^'\"\\]+)", re.S)
"""An escaped character, a single-quoted part, a double-quoted part or plain characters."""
_ESCAPED_IN_DOUBLE = re.compile(r'\\([\\"])')


def looks_like_path(token: str) -> bool:
    """A file operand worth tracking: a relative or absolute path or a name with an extension, with
    no shell expansion left in it, and not a device or a directory (a trailing ``/``)."""
    if not 2 <= len(token) <= 300 or token.startswith(("-", "/dev/")) or token.endswith("/"):
        return False
    if any(c in token for c in "$*?[]{}`'\"<>|;&=\n") or "://" in token:
        return False
    return "/" in token or _FILE_NAME.match(token) is not None


def fenced_commands(text: str) -> list[str]:
    """The bodies of the fenced shell blocks in an assistant message (mini-swe-agent's actions)."""
    return [body for body in _FENCE.findall(text) if body.strip()]


def command_of(arguments: object) -> str | None:
    """The shell command in a tool call's arguments (``command`` or ``cmd``; Codex's argv lists
    ``["bash", "-lc", script]`` give the script), or None."""
    if not isinstance(arguments, dict):
        return None
    value = arguments.get("command", arguments.get("cmd"))
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[1] in ("-c", "-lc"):
            return str(value[2])
        return shlex.join(value)
    return None


def command_artifacts(command: str) -> list[tuple[ArtifactOp, str]]:
    """``(op, path)`` for every file the command reads, edits or creates, in order of appearance."""
    found: list[tuple[ArtifactOp, str]] = []
    if not _may_name_artifacts(command):
        return found  # no line of it can (a line starts after a line break, a blank to the check)
    for line in _logical_lines(command):
        if not _may_name_artifacts(line):
            continue  # most lines of an agent's commands (python, grep, find, a script's body)
        tokens = shell_tokens(line)
        if tokens is None:  # an unbalanced quote: nothing certain on this line
            continue
        for words, redirects in _simple_commands(tokens):
            found.extend(redirects)
            found.extend(_operands(words))
    return [(op, path) for op, path in found if looks_like_path(path)]


def shell_tokens(line: str) -> list[str] | None:
    """The tokens ``shlex`` splits one line (no line break in it) into, in POSIX mode with punctuation
    characters and whitespace splitting, or None where it raises (an unclosed quote, a trailing
    backslash), by one regex step per token instead of ``shlex``'s Python step per character (six
    times as fast over the real sessions' command lines; equal to ``shlex``, tested).

    A token is a run of operator characters ``();<>|&``, or a word: plain characters, backslash
    escapes, single-quoted and double-quoted parts (inside which a backslash escapes only ``"`` and
    itself). A ``#`` where a token could start or inside a word's plain characters ends the line."""
    tokens: list[str] = []
    at = 0
    match = _SHELL_TOKEN.match
    while True:
        found = match(line, at)
        if found is None:
            return None if line[at:].strip(" \t") else tokens  # anything left is what shlex rejects
        comment, operator, word = found.groups()
        if comment is not None:
            return tokens
        at = found.end()
        tokens.append(operator if operator is not None else _unquoted(word))


def _unquoted(word: str) -> str:
    """A word's value: escapes and quotes taken out as a POSIX shell (and ``shlex``) takes them."""
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    value: list[str] = []
    for escaped, single, double, plain in _WORD_PART.findall(word):
        value.append(plain or escaped or single or _ESCAPED_IN_DOUBLE.sub(r"\1", double))
    return "".join(value)


def _may_name_artifacts(line: str) -> bool:
    """Whether splitting ``line`` can give an artifact, decided without splitting it (a sound
    over-approximation): a file comes from a redirection, whose operator holds ``<`` or ``>``, or
    from the operands of a program in :data:`_OPERAND_PROGRAMS`. A word is the line's characters
    with only quotes and backslashes taken out, and it starts after a blank, an operator character or
    the line's start (the program's name after a ``/``): with quotes and backslashes removed, such a
    program's name stands in the line at one of those places."""
    return "<" in line or ">" in line or _PROGRAM_WORD.search(line.translate(_QUOTING)) is not None


def _logical_lines(command: str) -> Iterator[str]:
    """Lines joined at trailing backslashes, with heredoc bodies left out."""
    lines = command.replace("\\\n", " ").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        yield line
        for match in _HEREDOC.finditer(line):
            delimiter = match.group(2)
            while index < len(lines) and lines[index].strip() != delimiter:
                index += 1
            index += 1  # the delimiter line itself


def _simple_commands(tokens: list[str]) -> Iterator[tuple[list[str], list[tuple[ArtifactOp, str]]]]:
    """Each simple command's words (redirections taken out) and its redirections' files."""
    words: list[str] = []
    redirects: list[tuple[ArtifactOp, str]] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if token in _SEPARATORS:
            yield words, redirects
            words, redirects = [], []
        elif token in ("<<", "<<-", "<<<"):
            position += 1  # the heredoc delimiter or here-string, not a file
        elif token in _REDIRECTS or (token[:-1].isdigit() and token[-1:] in "<>" and len(token) > 1):
            op = _REDIRECTS.get(token, "create" if token.endswith(">") else "read")
            if position < len(tokens) and not tokens[position].startswith("&"):
                redirects.append((op, tokens[position]))
            position += 1
        else:
            words.append(token)
    yield words, redirects


def _operands(words: list[str]) -> list[tuple[ArtifactOp, str]]:
    while words and (words[0] in _WRAPPERS or _ASSIGNMENT.match(words[0])):
        words = words[1:]
    if not words:
        return []
    program = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if program in _READERS:
        return [("read", w) for w in rest if not w.startswith("-") and not w.isdigit()]
    if program in _CREATORS:
        return [("create", w) for w in rest if not w.startswith("-")]
    if program == "cp":
        operands = [w for w in rest if not w.startswith("-")]
        return [("create", operands[-1])] if len(operands) >= 2 else []
    if program == "sed":
        return _sed(rest)
    return []


def _sed(arguments: list[str]) -> list[tuple[ArtifactOp, str]]:
    in_place = False
    has_script = False
    operands: list[str] = []
    skip_next = False
    for word in arguments:
        if skip_next:
            skip_next = False
            continue
        if word.startswith("-") and len(word) > 1:
            # -i, -i.bak, -ni (short options bundled) or --in-place
            in_place = in_place or word.startswith("--in-place") or (word[1] != "-" and "i" in word[1:])
            if word in ("-e", "-f", "--expression", "--file"):
                has_script, skip_next = True, True
            continue
        operands.append(word)
    files = operands if has_script else operands[1:]
    return [("edit" if in_place else "read", f) for f in files]
