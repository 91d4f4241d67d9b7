"""Options and output helpers shared by sub-commands."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from contextlab.errors import ConfigError
from contextlab.host.settings import ENGINE_TOOL_MODES, TOOL_RESULT_MODES, HostSettings
from contextlab.host.versions import HERMES_VERSIONS

if TYPE_CHECKING:
    from contextlab.hostconfig import HostConfig

DEFAULT_CONTEXT_LENGTH = HostSettings.context_length

HOST_OPTIONS: dict[str, str] = {
    "context_length": "context_length",
    "threshold_percent": "threshold_percent",
    "overhead": "fixed_overhead_tokens",
    "model": "model",
    "encoding": "encoding",
    "seed": "seed",
    "usage_model": "usage_model",
    "engine_tools": "engine_tools",
    "tool_results": "tool_results",
    "session_store": "session_store",
    "hermes_version": "hermes_version",
}
"""Option destination → the ``HostSettings`` field it sets. Every host option defaults to None, so an
option counts as given exactly when argparse stored a value: ``--context-length 200000`` (the default
value) still overrides a config file."""


def add_host_options(parser: argparse.ArgumentParser) -> None:
    """``--context-length``, ``--threshold-percent``, ``--overhead``, ``--model``, ``--seed``, ``--param``...

    Options left out stay None (:func:`given_settings`); ``HostSettings`` supplies their defaults.
    """
    parser.add_argument(
        "--context-length",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"model window in tokens (default: --config's model.context_length, else {DEFAULT_CONTEXT_LENGTH})",
    )
    parser.add_argument(
        "--threshold-percent",
        type=_fraction,
        default=None,
        metavar="P",
        help="threshold as a fraction of the window, e.g. 0.5 (engine default if omitted)",
    )
    parser.add_argument(
        "--overhead",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="fixed prompt tokens the recording omits (system prompt, tool schemas; default 0)",
    )
    parser.add_argument(
        "--model", default=None, help="model name passed to the engine (default: the transcript's, else gpt-4o)"
    )
    parser.add_argument(
        "--encoding",
        default=None,
        help=f"tiktoken encoding for exact counts (cl100k_base, o200k_base; default {HostSettings.encoding})",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed for uid minting (default 0)")
    parser.add_argument(
        "--usage-model",
        choices=("exact", "rough", "recorded"),
        default=None,
        help="prompt tokens reported to the engine: exact (tiktoken), rough (the host's estimate), recorded",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine constructor parameter (repeatable; VALUE parsed as YAML)",
    )
    parser.add_argument(
        "--engine-tools",
        choices=ENGINE_TOOL_MODES,
        default=None,
        help="results of the engine's own tools: as recorded (default) or answered live by handle_tool_call",
    )
    parser.add_argument(
        "--tool-results",
        choices=TOOL_RESULT_MODES,
        default=None,
        help="tool outputs: made into rows as the host makes them (default: oversized ones spilled to a "
        "preview) or sent as recorded",
    )
    parser.add_argument(
        "--hermes-version",
        choices=tuple(HERMES_VERSIONS),
        default=None,
        help="the Hermes host the replay follows: newest (default: newer upstream) or 0.19.0 (PyPI "
        "hermes-agent 0.19.0: rough-estimate gates; the compressor follows unless --param hermes_rules=...)",
    )
    parser.add_argument(
        "--no-session-store",
        dest="session_store",
        action="store_const",
        const=False,
        default=None,
        help="replay a host without a session store (a bare AIAgent): a compaction does not end the "
        "engine's session (the CLI's store calls on_session_end at each commit)",
    )


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``HostSettings`` field → value for every host option given on the command line (nothing else)."""
    given = {field_name: getattr(args, dest, None) for dest, field_name in HOST_OPTIONS.items()}
    return {name: value for name, value in given.items() if value is not None}


def engine_params(pairs: list[str]) -> dict[str, Any]:
    import yaml

    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param {pair!r}: expected KEY=VALUE")
        try:
            params[key.strip()] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            params[key.strip()] = raw
    return params


TABLE_WIDTH = 100
"""Tables the CLI prints fit this many columns (a standard terminal with room to spare)."""

MIN_CELL = 12
"""A text column is never cut below this many characters."""


def format_table(frame: pd.DataFrame, width: int = TABLE_WIDTH) -> str:
    """A plain, aligned text table (no index) that fits ``width`` columns.

    Timestamps (datetime columns, and epoch seconds in a ``timestamp`` column) print as dates. When
    the table is too wide the widest text column is cut with an ellipsis, then the next, down to
    :data:`MIN_CELL` characters each; if that is not enough, the last columns are left out and a line
    under the table names them.
    """
    shown = frame.copy()
    dates: set[str] = set()
    for column in shown.columns:
        if pd.api.types.is_datetime64_any_dtype(shown[column]) or str(column) == "timestamp":
            dates.add(str(column))  # a cut date is no date: never shortened
        if pd.api.types.is_datetime64_any_dtype(shown[column]):
            shown[column] = shown[column].dt.strftime("%Y-%m-%d %H:%M")
        elif str(column) == "timestamp" and pd.api.types.is_numeric_dtype(shown[column]):
            stamps = pd.to_datetime(shown[column], unit="s", utc=True, errors="coerce")
            shown[column] = stamps.dt.strftime("%Y-%m-%d %H:%M:%S").fillna("")
    text_columns = [
        c for c in shown.columns if shown[c].dtype == object or pd.api.types.is_string_dtype(shown[c].dtype)
    ]
    for column in text_columns:
        shown[column] = shown[column].map(lambda v: "" if v is None or v is pd.NA else str(v)).astype(object)
    rendered = shown.to_string(index=False)
    while _width(rendered) > width:
        widths = {c: int(shown[c].map(len).max() or 0) for c in text_columns if len(shown) and str(c) not in dates}
        cuttable = {c: w for c, w in widths.items() if w > MIN_CELL}
        if not cuttable:
            break
        column = max(cuttable, key=lambda c: cuttable[c])
        keep = max(MIN_CELL, cuttable[column] - (_width(rendered) - width))
        shown[column] = shown[column].map(lambda v, k=keep: ellipsize(v, k))
        rendered = shown.to_string(index=False)
    left_out: list[str] = []
    while _width(rendered) > width and len(shown.columns) > 1:
        left_out.insert(0, str(shown.columns[-1]))
        shown = shown.iloc[:, :-1]
        rendered = shown.to_string(index=False)
    if left_out:
        rendered += "\n" + ellipsize(f"(not shown to fit {width} columns: {', '.join(left_out)})", width)
    return rendered


def ellipsize(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def _width(rendered: str) -> int:
    return max((len(line) for line in rendered.splitlines()), default=0)


def check_output_path(path: str | None) -> Path | None:
    """Validate ``--out`` before any work is done, so a typo does not waste a long replay."""
    if path is None:
        return None
    out = Path(path)
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise ConfigError(f"--out {path}: use a .csv or .parquet file name")
    if not out.parent.exists():
        raise ConfigError(f"--out {path}: folder {out.parent} does not exist")
    check_writable(out, "--out")
    return out


def check_writable(out: Path, option: str) -> None:
    """Refuse an output path the run could not write, before any work is done."""
    import os

    if out.is_dir():
        raise ConfigError(f"{option} {out}: is a folder, expected a file name")
    if out.exists() and not os.access(out, os.W_OK):
        raise ConfigError(f"{option} {out}: file is not writable")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {out}: folder {out.parent} is not writable")


def _positive_int(text: str) -> int:
    value = _int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value <= 1:  # also refuses NaN; "50" is not silently read as 50%
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], e.g. 0.5, got {text!r}")
    return value


def add_plugin_options(parser: argparse.ArgumentParser) -> None:
    """``--plugin-path DIR`` (repeatable) and ``--config config.yaml``, as every engine-resolving command takes them."""
    parser.add_argument(
        "--plugin-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of <name>/ engine plugins (a context_engine/ folder, or a plugins/ folder holding one)",
    )
    parser.add_argument(
        "--config",
        default=None,
        metavar="CONFIG_YAML",
        help="a Hermes config.yaml: context.engine, model.*, compression.* (see docs/engine-authors.md)",
    )


def apply_plugin_options(args: argparse.Namespace) -> Any:
    """Register ``--plugin-path`` folders and read ``--config``; returns the ``HostConfig`` or None."""
    from contextlab import plugins
    from contextlab.hostconfig import load_host_config

    for path in args.plugin_path:
        plugins.add_plugin_path(path)
    return load_host_config(args.config) if args.config else None


@dataclass(frozen=True)
class RunOptions:
    """What ``--engine``, the host options, ``--param``, ``--plugin-path`` and ``--config`` ask for.

    Precedence, lowest first: ``HostSettings`` defaults, the host ``config.yaml`` (``--config``), a
    sweep file's settings (bench), the options given on the command line.

    Attributes:
        engines: The engines named on the command line, else the config's ``context.engine``, else none.
        host: The host config read from ``--config`` (None without it).
        flags: ``HostSettings`` fields given on the command line.
        params: ``--param`` engine parameters.
    """

    engines: list[str]
    host: HostConfig | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def settings(self, between: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``HostSettings`` fields: the host config's, then ``between`` (a sweep file's), then the flags."""
        return {**(self.host.settings if self.host else {}), **(between or {}), **self.flags}

    def compressor_params(self, engines: Sequence[str]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """The config's ``compression.*`` as ``(params for every engine, scoped one-value grid)``.

        They reach the compressor only (the host never passes them to a plugin engine, and
        ``hermes.compressor`` gets only the keys its host knows: ``HostConfig.params_for``): as plain
        parameters when every engine gets the same ones, else scoped to each compressor engine
        (``compressor.threshold_percent: [0.5]``), never to the other engines.
        """
        if self.host is None or not self.host.compressor_params:
            return {}, {}
        own = {engine: self.host.params_for(engine, {}) for engine in engines}
        if len({tuple(sorted(p.items())) for p in own.values()}) <= 1:
            return (next(iter(own.values())) if own else {}), {}
        scoped = {f"{engine}.{key}": [value] for engine, params in own.items() for key, value in params.items()}
        return {}, scoped


def run_options(args: argparse.Namespace, engines: Sequence[str]) -> RunOptions:
    """Register ``--plugin-path`` folders, read ``--config``, and collect what the command line gave."""
    host = apply_plugin_options(args)
    names = list(engines) or ([host.engine] if host is not None else [])
    return RunOptions(names, host, given_settings(args), engine_params(getattr(args, "param", [])))


def configured_run(
    args: argparse.Namespace, engines: list[str], default_engine: str = "passthrough"
) -> tuple[list[str], HostSettings, dict[str, Any]]:
    """Engines, host settings and engine parameters of a one-engine command (replay, check).

    No engine named: the config's ``context.engine``, else ``default_engine``. ``--param`` wins
    over the config's ``compression.*`` (which reach the compressor only, :class:`RunOptions`).
    """
    options = run_options(args, engines)
    names = options.engines or [default_engine]
    params, _ = options.compressor_params(names[:1])
    return names, HostSettings(**options.settings()), {**params, **options.params}
