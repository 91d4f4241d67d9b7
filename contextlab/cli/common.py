"""Options and output helpers shared by sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings


def add_host_options(parser: argparse.ArgumentParser) -> None:
    """``--context-length``, ``--threshold-percent``, ``--overhead``, ``--model``, ``--seed``, ``--param``."""
    parser.add_argument(
        "--context-length",
        type=_positive_int,
        default=200_000,
        metavar="N",
        help="model window in tokens (default 200000)",
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
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine constructor parameter (repeatable; VALUE parsed as YAML)",
    )
    parser.add_argument(
        "--engine-tools",
        choices=("recorded", "live"),
        default="recorded",
        help="results of the engine's own tools: as recorded (default) or answered live by handle_tool_call",
    )


def host_settings(args: argparse.Namespace) -> HostSettings:
    return HostSettings(
        context_length=args.context_length,
        threshold_percent=args.threshold_percent,
        fixed_overhead_tokens=args.overhead,
        model=args.model,
        encoding=args.encoding,
        seed=args.seed,
        engine_tools=getattr(args, "engine_tools", "recorded"),
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


def format_table(frame: pd.DataFrame) -> str:
    """A plain, aligned text table (no index)."""
    return frame.to_string(index=False)


def check_output_path(path: str | None) -> Path | None:
    """Validate ``--out`` before any work is done, so a typo does not waste a long replay."""
    if path is None:
        return None
    out = Path(path)
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise ConfigError(f"--out {path}: use a .csv or .parquet file name")
    if not out.parent.exists():
        raise ConfigError(f"--out {path}: folder {out.parent} does not exist")
    return out


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
    if value > 1 and value <= 100:
        value /= 100  # accept 50 as 50%
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1] or a percent, got {text!r}")
    return value


def cache_observers(specs: list[str], policy: str) -> list[Any]:
    """The ``--cache`` observers (none when no spec is given); a model without a price row is a
    one-line error naming the known models, not a column of NaN costs."""
    if not specs:
        return []
    import warnings

    from contextlab.cache.observer import CacheObserver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unpriced case is refused right below
        observer = CacheObserver(specs, policy)
    missing = observer.unpriced()
    if missing:
        known = ", ".join(sorted(f"{r.provider}:{r.model}" for r in observer.prices.rows.values()))
        raise ConfigError(
            f"--cache {missing[0]}: no price for this model (known: {known}); "
            "add a row in a YAML file named by $CONTEXTLAB_PRICES"
        )
    return [observer]
