"""A dedicated virtual environment with the real Hermes host, built once per checkout.

``hermes-agent`` hard-pins its dependencies (openai, pyyaml, pydantic, ...), so it is not installed
into the test environment: the ``hermes_python`` fixture builds ``.hermes-venv/`` next to the
repository the way a user installs the extra (``pip install -e '.[hermes]'``), reuses it while the
pinned version and ``pyproject.toml`` are unchanged, and the tests drive it in subprocesses. A file
lock keeps ``pytest -n 2`` workers from building it twice. ``CONTEXTLAB_HERMES_VENV`` names another
place (an existing environment with contextlab and hermes-agent installed is used as it is).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HERMES_PIN = "hermes-agent==0.19.0"
BUILD_TIMEOUT_S = 1800


def _stamp() -> str:
    digest = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return f"{HERMES_PIN} {digest} {sys.version_info[:2]}"


def _bin(env: Path, name: str) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin") / name


def build_hermes_env(env: Path) -> Path:
    """The python of ``env``, (re)built with contextlab[hermes] unless its stamp is current."""
    stamp_file = env / ".contextlab-stamp"
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the other xdist worker waits and reuses it
        if stamp_file.is_file() and stamp_file.read_text() == _stamp() and _bin(env, "python").exists():
            return _bin(env, "python")
        venv.EnvBuilder(clear=True, with_pip=True).create(env)
        python = _bin(env, "python")
        install = ["install", "-q", "--disable-pip-version-check", "-e", f"{REPO}[hermes]", HERMES_PIN]
        done = subprocess.run(
            [str(python), "-m", "pip", *install],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            raise RuntimeError(f"installing contextlab[hermes] into {env} failed:\n{tail}")
        stamp_file.write_text(_stamp())
        return python


@pytest.fixture(scope="session")
def hermes_python() -> Path:
    """A python with the real ``hermes-agent`` (its ``agent`` package) and contextlab installed."""
    configured = os.environ.get("CONTEXTLAB_HERMES_VENV")
    if configured:
        python = _bin(Path(configured), "python")
        if not python.exists():
            raise RuntimeError(f"$CONTEXTLAB_HERMES_VENV={configured}: no {python}")
        return python
    return build_hermes_env(REPO / ".hermes-venv")


def run_python(python: Path, code: str, *, env: dict[str, str] | None = None, timeout: int = 900) -> Any:
    """Run ``code`` with ``python`` in the repository; returns the JSON its last stdout line prints."""
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "Agg", **(env or {})},
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, f"no output\n{done.stderr[-3000:]}"
    return json.loads(lines[-1])
