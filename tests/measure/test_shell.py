"""File operands of shell commands: the artifact trail of agents that act through a shell."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.measure import shell
from contextlab.measure.shell import command_artifacts, command_of, fenced_commands, looks_like_path, shell_tokens

CASES: list[tuple[str, list[tuple[str, str]]]] = [
    ("cat requests/models.py", [("read", "requests/models.py")]),
    ("nl -ba src/app.py | sed -n '340,400p'", [("read", "src/app.py")]),
    ("sed -n '1,80p' setup.cfg && head -n 20 README.rst", [("read", "setup.cfg"), ("read", "README.rst")]),
    ("sed -i 's/old/new/' pkg/a.py pkg/b.py", [("edit", "pkg/a.py"), ("edit", "pkg/b.py")]),
    ("sed -i.bak -e 's/x/y/' conf/app.ini", [("edit", "conf/app.ini")]),
    ("echo 'import os' >> lib/util.py", [("edit", "lib/util.py")]),
    (
        "cat <<'EOF' > reproduce.py\nimport requests\nprint(open('x.txt').read())\nEOF\npython reproduce.py",
        [("create", "reproduce.py")],
    ),
    (
        "touch a/b/__init__.py; cp tpl/base.html out/index.html",
        [("create", "a/b/__init__.py"), ("create", "out/index.html")],
    ),
    ("python x.py 2>&1 | tee logs/run.log", [("create", "logs/run.log")]),
    ("cd /repo && grep -rn 'Content-Length' requests/ | head", []),  # grep patterns and directories are not files read
    ("ls -la tests/", []),
    ("cat $HOME/.bashrc *.py > /dev/null", []),  # expansions and devices are not tracked
    ("cat 'unbalanced", []),
    ("git diff > changes.patch", [("create", "changes.patch")]),
    ("FOO=1 sudo tail -f /var/log/app.log", [("read", "/var/log/app.log")]),
]


@pytest.mark.parametrize(("command", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_command_artifacts(command: str, expected: list[tuple[str, str]]) -> None:
    assert command_artifacts(command) == expected


def test_heredoc_bodies_and_here_strings_are_not_commands() -> None:
    body = "cat > notes.md <<EOF\ncat secret/body.txt\nsed -i 's/a/b/' not/me.py\nEOF\ncat after.txt"
    assert command_artifacts(body) == [("create", "notes.md"), ("read", "after.txt")]
    assert command_artifacts("grep foo <<< 'cat x/y.py'\ncat z/w.py") == [("read", "z/w.py")]


def test_commands_in_tool_arguments_and_fenced_blocks() -> None:
    assert command_of({"command": "cat a/b.py"}) == "cat a/b.py"
    assert command_of({"cmd": ["bash", "-lc", "sed -n 1,5p x/y.py"]}) == "sed -n 1,5p x/y.py"
    assert command_of({"command": ["cat", "my file.txt"]}) == "cat 'my file.txt'"
    assert command_of({"path": "a.py"}) is None and command_of("cat a.py") is None
    text = "THOUGHT: look.\n\n```bash\ncat src/x.py\n```\nand\n```python\nprint(1)\n```"
    assert fenced_commands(text) == ["cat src/x.py\n"]


def test_looks_like_path() -> None:
    assert looks_like_path("src/a.py") and looks_like_path("setup.cfg") and looks_like_path("/etc/hosts")
    assert not any(map(looks_like_path, ["-n", "1,80p", "https://x.io/a.py", "$F", "a", "/dev/null", "s/a/b/"]))


_FRAGMENTS = [
    *("cat", "head", "tail", "nl", "less", "more", "touch", "tee", "cp", "sed", "sudo", "xargs", "X=1"),
    *("echo", "grep", "python", "cd", "concat", "ls", "-i", "-n", "-e", "1,5p", "s/a/b/"),
    *("/bin/cat", "c'a't", '"sed"', "\\tee", "to\\uch", 'h""ead'),
    *("a.py", "src/b.py", "/bin/", "x/y.txt", "f.md", "$F", "`", "#", "{", "}", "=", "!"),
    *(" ", " ", " ", "\t", "\x0b", "'", "'", '"', '"', "\\", "\\ ", ";", "&&", "||", "|", "&", "(", ")"),
    *(">", ">>", "<", "2>", "&>", "<<", "<<<", "<<EOF", "\n", "EOF", "\\\n"),
]


def _without_the_prefilter(command: str) -> list[tuple[str, str]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shell, "_may_name_artifacts", lambda line: True)
        return command_artifacts(command)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map("".join))
def test_lines_passed_over_unsplit_would_name_no_artifact(command: str) -> None:
    # A line is split by shlex only when it may name a file; any other line gives none when split.
    assert command_artifacts(command) == _without_the_prefilter(command)


def test_the_prefilter_passes_over_most_commands_but_not_their_files() -> None:
    assert not shell._may_name_artifacts("cd /testbed && python -c 'import x; print(x.concat())'")
    assert not shell._may_name_artifacts("grep -rn 'scat' src/ | wc -l")
    for line in ("c'a't a.py", 'X=1 "/usr/bin/"se\\d -n 1p f.py', "echo x>f.py", "(tee out/log.txt)"):
        assert shell._may_name_artifacts(line) and command_artifacts(line) == _without_the_prefilter(line)
        assert command_artifacts(line), line


def _shlex_tokens(line: str) -> list[str] | None:
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return None


_CHARACTERS = [*"ab ;&|()<>#'\"\\\t$`=-/.x", "cat", "\\\\", "\\'", '\\"', "''", '""', "\xa0", "é", "2>", "&&", "#x"]


@settings(max_examples=5000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_CHARACTERS), max_size=14).map("".join))
def test_shell_tokens_are_shlex_tokens(line: str) -> None:
    assert shell_tokens(line) == _shlex_tokens(line)


def test_shell_tokens_of_quotes_escapes_operators_and_comments() -> None:
    line = """sed -i's/a b/c/' "x \\"y\\" \\\\z \\q" a\\ b''c 2>&1>>log.txt; echo ok#not # gone"""
    expected = ["sed", "-is/a b/c/", 'x "y" \\z \\q', "a bc", "2", ">&", "1", ">>", "log.txt", ";", "echo", "ok"]
    assert shell_tokens(line) == expected == _shlex_tokens(line)
    assert shell_tokens("echo 'open") is None and shell_tokens("echo x\\") is None
    assert shell_tokens("echo '' \"\"") == ["echo", "", ""] and shell_tokens("  ") == []
