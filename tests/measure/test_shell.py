"""File operands of shell commands: the artifact trail of agents that act through a shell."""

from __future__ import annotations

import pytest

from contextlab.measure.shell import command_artifacts, command_of, fenced_commands, looks_like_path

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
