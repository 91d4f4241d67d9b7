"""The ``contextlab`` command line: one module per sub-command, each with ``register(subparsers)``.

User mistakes (a missing file, bad JSON, an unknown engine, a bad option value) print one line
``contextlab: error: ...`` and exit 2; they never show a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from contextlab.errors import ContextLabError

COMMAND_MODULES: tuple[str, ...] = (
    "replay",
    "bench",
    "engines",
    "check",
    "calibrate",
    "report",
    "convert",
    "datasets",
    "inspect",
)
"""Sub-command modules under ``contextlab.cli``, in the order ``--help`` lists them."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="contextlab", description=__doc__.splitlines()[0] if __doc__ else None)
    from contextlab import __version__

    parser.add_argument("--version", action="version", version=f"contextlab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(f"contextlab.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``contextlab`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from contextlab.transcripts.warning_lines import warning_lines

    try:
        with warning_lines():
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


if __name__ == "__main__":
    sys.exit(main())
