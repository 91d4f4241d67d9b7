"""The ``contextlab`` command line: one module per sub-command, each with ``register(subparsers)``.

Sub-commands are registered lazily: ``contextlab --help`` and ``contextlab --version`` import no
sub-command module (so no pandas or matplotlib), and ``contextlab replay ...`` imports only
``contextlab.cli.replay``. User mistakes (a missing file, bad JSON, an unknown engine, a bad option
value) print one line ``contextlab: error: ...`` and exit 2; they never show a traceback.
"""

from __future__ import annotations

import argparse
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

from contextlab.registry import Registry

COMMAND_MODULES: Registry[types.ModuleType] = Registry("command")
"""Sub-command → its module ``contextlab.cli.<name>`` (lazy: imported only when that command runs), with
its one-line help as the entry's description, in the order ``--help`` lists them."""
for _name, _help in (
    ("replay", "replay one transcript through an engine and summarize the run"),
    ("bench", "sweep transcripts x engines x settings and write the result tables"),
    ("report", "build a self-contained HTML report from bench output"),
    ("engines", "list the engines you can replay (built-in and plugins)"),
    ("check", "check an engine against the host contract (conformance kit)"),
    ("calibrate", "compare simulated with recorded prompt-cache reads"),
    ("convert", "convert a transcript file to contextlab's normalized JSONL"),
    ("datasets", "list or regenerate the bundled generated conversations"),
    ("inspect", "list a transcript file's conversations, requests, tokens and recorded usage"),
):
    COMMAND_MODULES.register(_name, target=f"contextlab.cli.{_name}", description=_help, source="builtin")

COMMANDS: dict[str, str] = {entry.name: entry.description for entry in COMMAND_MODULES.entries()}
"""Sub-command → its one-line help. The one place the one-line help lives, so ``--help`` needs no
sub-command import."""

DESCRIPTION = (
    "Replay recorded agent conversations through a simulated Hermes Agent host and candidate context\n"
    "engines; measure prompt tokens against the threshold, compactions, prompt-cache hits and cost,\n"
    "and how many facts stay in context."
)

EPILOG = """\
start here:
  contextlab datasets list
  contextlab replay datasets/support-agent.jsonl.gz --engine compressor --context-length 128000
  contextlab replay datasets/support-agent.jsonl.gz --engine compressor --cache anthropic:claude-sonnet-5-5
  contextlab engines
  contextlab bench datasets/support-agent.jsonl.gz --engine passthrough --engine compressor --out results

Run `contextlab COMMAND --help` for the options of one command. Notebooks: notebooks/ (README)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


class _HelpFormat(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks, fits 100 columns, and aligns every command's help
    (argparse sizes the column without the sub-command indent, so ``calibrate`` would wrap)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=24, width=100)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.dest == "command":
            self._action_max_length = max(self._action_max_length, 6 + max(map(len, COMMANDS)))


class _TableHelp:
    """A sub-parser action wrapper that takes each command's one-line help from :data:`COMMANDS`."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs["help"] = COMMANDS.get(name, kwargs.get("help"))
        parser: argparse.ArgumentParser = self._subparsers.add_parser(name, **kwargs)
        return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` (the first word that is not an option), if any."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None, *, full: bool = False) -> argparse.ArgumentParser:
    """The argument parser, with only the sub-command named in ``argv`` fully registered.

    Args:
        argv: The arguments about to be parsed (decides which sub-command module to import).
        full: Register every sub-command (imports them all; for tests and docs).
    """
    parser = _Parser(
        prog="contextlab",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=_HelpFormat,
    )
    from contextlab import __version__

    parser.add_argument("--version", action="version", version=f"contextlab {__version__}")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    chosen = chosen_command(sys.argv[1:] if argv is None else argv)
    for name, help_line in COMMANDS.items():
        if full or name == chosen:
            COMMAND_MODULES.lookup(name).register(_TableHelp(subparsers))
        else:
            subparsers.add_parser(name, help=help_line)  # a name in the list; its options load on use
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``contextlab`` console script."""
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = chosen_command(words)
    if chosen is not None and chosen not in COMMAND_MODULES:
        print(f"contextlab: error: {COMMAND_MODULES.unknown(chosen)}", file=sys.stderr)
        return 2
    parser = build_parser(words)
    args = parser.parse_args(words)
    warnings.showwarning = _one_line_warning
    from contextlab.errors import ContextLabError
    from contextlab.transcripts.warning_lines import warning_lines

    try:
        with warning_lines():  # import warnings: one line each, a few, then a count
            code = args.run(args)
    except ContextLabError as error:
        print(f"contextlab: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("contextlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(code or 0)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Warnings in the CLI read as one line for a person, not a source location."""
    print(f"contextlab: warning: {message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
