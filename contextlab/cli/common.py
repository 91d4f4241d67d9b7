"""Options and output helpers shared by sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.errors import ConfigError
from contextlab.host.settings import ENGINE_TOOL_MODES, HostSettings

DEFAULT_CONTEXT_LENGTH = 200_000


def add_host_options(parser: argparse.ArgumentParser) -> None:
    """``--context-length``, ``--threshold-percent``, ``--overhead``, ``--model``, ``--seed``, ``--param``."""
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
        default=0,
        metavar="N",
        help="fixed prompt tokens the recording omits (system prompt, tool schemas)",
    )
    parser.add_argument(
        "--model", default=None, help="model name passed to the engine (default: the transcript's, else gpt-4o)"
    )
    parser.add_argument(
        "--encoding", default="cl100k_base", help="tiktoken encoding for exact counts (cl100k_base, o200k_base)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for uid minting (default 0)")
    parser.add_argument(
        "--usage-model",
        choices=("exact", "rough", "recorded"),
        default="exact",
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
        default="recorded",
        help="results of the engine's own tools: as recorded (default) or answered live by handle_tool_call",
    )


def host_settings(args: argparse.Namespace) -> HostSettings:
    return HostSettings(
        context_length=args.context_length or DEFAULT_CONTEXT_LENGTH,
        threshold_percent=args.threshold_percent,
        fixed_overhead_tokens=args.overhead,
        model=args.model,
        encoding=args.encoding,
        seed=args.seed,
        engine_tools=getattr(args, "engine_tools", "recorded"),
        usage_model=getattr(args, "usage_model", "exact"),
    )


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


def configured_run(
    args: argparse.Namespace, engines: list[str], default_engine: str = "passthrough"
) -> tuple[list[str], HostSettings, dict[str, Any]]:
    """Engines, host settings and engine parameters after ``--plugin-path`` and ``--config``.

    No engine named: the config's ``context.engine``, else ``default_engine``. The config's
    settings apply where the command line left the default; its ``compression.*`` parameters reach
    the compressor only (the host never passes them to a plugin engine), under ``--param``.
    """
    config = apply_plugin_options(args)
    names = list(engines) or [config.engine if config is not None else default_engine]
    # A command without the host options (check) still gets the config's engine and parameters.
    settings = host_settings(args) if hasattr(args, "overhead") else HostSettings()
    params = engine_params(args.param)
    if config is not None:
        explicit = {k for k in ("context_length", "model") if getattr(args, k, None) is not None}
        settings = config.apply(settings, explicit=explicit)
        if len({config.params_for(name, {}) == {} for name in names}) == 1:
            params = config.params_for(names[0], params)  # never the compressor's keys on another engine
    return names, settings, params
