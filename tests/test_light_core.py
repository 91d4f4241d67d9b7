"""The light core (issue 15 item 1): what plugins import inside the host, and ``contextlab --help``
/ ``--version``, load no pandas, pyarrow or matplotlib. Checked in a fresh interpreter each time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "pyarrow", "matplotlib", "ipywidgets", "IPython", "tqdm", "numpy")

PROBE = """
import json, sys
{code}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})))
"""


def loaded_after(code: str) -> list[str]:
    """Heavy top-level modules present in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = PROBE.format(code=code, heavy=set(HEAVY))
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return sorted({name.split(".")[0] for name in found})


@pytest.mark.parametrize(
    "code",
    [
        "import contextlab",
        "import contextlab.engines.parts",
        "from contextlab.engine import ContextEngine",
        "import contextlab; from agent.context_engine import ContextEngine",
        "import contextlab.engines.handoff, contextlab.engines.summarizers",
    ],
)
def test_plugin_imports_stay_light(code: str) -> None:
    assert loaded_after(code) == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["replay", "--help"]])
def test_cli_help_and_version_stay_light(argv: list[str]) -> None:
    code = f"""
import contextlab.cli, contextlab.cli as c
try:
    c.main({argv!r})
except SystemExit:
    pass
"""
    loaded = loaded_after(code)
    if argv[0] == "replay":
        # A command's own --help may import what the command uses, but never the notebook stack.
        assert not {"ipywidgets", "IPython", "matplotlib"} & set(loaded)
    else:
        assert loaded == []


def test_lazy_names_resolve_to_their_objects() -> None:
    import contextlab
    from contextlab.api import replay
    from contextlab.engine import ContextEngine

    assert contextlab.replay is replay and contextlab.ContextEngine is ContextEngine
    assert set(contextlab.__all__) <= set(dir(contextlab))
    for name in contextlab.__all__:
        assert getattr(contextlab, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = contextlab.nope  # type: ignore[attr-defined]


def test_help_lists_every_command_with_the_table_help(capsys: pytest.CaptureFixture[str]) -> None:
    from contextlab.cli import COMMANDS, main

    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    for name, line in COMMANDS.items():
        assert f"{name}  " in out and line in out
    assert "start here:" in out


def test_full_parser_registers_each_command_under_its_name() -> None:
    from contextlab.cli import COMMANDS, build_parser

    parser = build_parser([], full=True)
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS)  # type: ignore[attr-defined]
    helps = {a.dest: a.help for a in sub._choices_actions}  # type: ignore[attr-defined]
    assert helps == COMMANDS


def test_unknown_command_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    from contextlab.cli import main

    assert main(["replya"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("contextlab: error: unknown command 'replya'; did you mean 'replay'? (available: replay, ")


def test_all_lists_exactly_the_lazy_names() -> None:
    import contextlab

    assert sorted(contextlab.__all__) == sorted(["__version__", *contextlab._LAZY])


def test_submodules_stay_reachable_as_attributes() -> None:
    import contextlab

    assert contextlab.plugins.list_engines  # type: ignore[attr-defined]
    assert contextlab.cache.CacheObserver is contextlab.CacheObserver  # type: ignore[attr-defined]
