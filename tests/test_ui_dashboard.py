"""Opt-in real-browser test: JupyterLab on 127.0.0.1, Debian chromium driven by Playwright.

Runs the dashboard notebook, moves the threshold slider with the keyboard, and checks that the
readout and the plot changed. Skipped when ``/usr/bin/chromium`` or pytest-playwright is missing
(``pip install -e '.[ui-test]'`` and ``apt-get install -y chromium``); select with ``-m ui``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.ui,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]
pytest.importorskip("pytest_playwright", reason="needs the [ui-test] extra (pytest-playwright)")
jupytext = pytest.importorskip("jupytext")
from playwright.sync_api import Page, expect  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
IDLE = "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright's launch options: the system chromium, no browser download."""
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "headless": True, "args": FLAGS}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def lab_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on loopback with the dashboard notebook in its root; stopped by its PID."""
    root = tmp_path_factory.mktemp("lab")
    for name in ("config", "runtime", "workspaces", "data"):
        (root / name).mkdir()
    settings = root / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    notebooks = root / "work"
    notebooks.mkdir()
    jupytext.write(jupytext.read(REPO / "notebooks" / "04_dashboard.py"), notebooks / "dashboard.ipynb")
    token, port = secrets.token_hex(16), _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "TQDM_DISABLE": "1",
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={notebooks}",
        f"--LabApp.workspaces_dir={root / 'workspaces'}",
        f"--LabApp.user_settings_dir={root / 'settings'}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    log = (root / "server.log").open("w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not start; see {root / 'server.log'}")
            time.sleep(0.3)
        yield f"{base}/lab/tree/dashboard.ipynb?token={token}"
    finally:
        server.terminate()  # the server shuts its kernels down on SIGTERM
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _wait_idle(page: Page) -> None:
    """Idle for three polls in a row: two key presses queue two replays, with an idle blink between."""
    calm = 0
    deadline = time.monotonic() + 90
    while calm < 3:
        page.wait_for_timeout(400)
        calm = calm + 1 if page.evaluate(IDLE) else 0
        if time.monotonic() > deadline:
            raise AssertionError("the kernel never went idle")


def test_slider_moves_replay_and_plot(page: Page, lab_url: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 1600})
    page.goto(lab_url)
    page.wait_for_function(IDLE, timeout=90_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    _wait_idle(page)
    readout = page.locator(".widget-slider .widget-readout").first
    expect(readout).to_have_text("0.50", timeout=60_000)  # the notebook's last cell left it at 0.5
    image = page.locator(".jp-OutputArea-output img").first
    expect(image).to_be_visible(timeout=60_000)
    before = image.get_attribute("src")

    handle = page.locator(".widget-slider .noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    expect(readout).to_have_text("0.60", timeout=30_000)
    _wait_idle(page)
    expect(image).not_to_have_attribute("src", before or "", timeout=60_000)
    table = page.locator(".jp-OutputArea-output table").first
    expect(table).to_contain_text("recent_turns")
    # Kept for a person to look at: set CONTEXTLAB_UI_SHOTS to a folder to keep it after the run.
    page.screenshot(path=str(Path(os.environ.get("CONTEXTLAB_UI_SHOTS") or tmp_path) / "contextlab-dashboard.png"))
