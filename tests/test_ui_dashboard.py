"""Opt-in real-browser test: JupyterLab on 127.0.0.1, Debian chromium driven by Playwright.

Opens the committed dashboard notebook by double-clicking it in JupyterLab's file browser (no
converted copy: the server's root holds the repository's notebooks/ files as committed), runs all
cells, moves the threshold slider with the keyboard, and checks that the slider readout, the
effective-threshold readout and the plot changed; saves a screenshot. Skipped when
``/usr/bin/chromium`` or pytest-playwright is missing (``pip install -e '.[ui-test]'`` and
``apt-get install -y chromium``); select with ``-m ui``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
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
    # The committed files as they are: the .ipynb a user double-clicks, its .py twin, jupytext.toml.
    shutil.copytree(REPO / "notebooks", notebooks, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
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
        yield f"{base}/lab?token={token}"
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


def test_double_click_opens_the_dashboard_and_the_slider_replots(page: Page, lab_url: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1400, "height": 1700})
    page.goto(lab_url)
    item = page.locator(".jp-DirListing-item", has_text="05_dashboard.ipynb")
    expect(item).to_be_visible(timeout=90_000)
    item.dblclick()
    expect(page.locator(".jp-NotebookPanel")).to_be_visible(timeout=60_000)
    # A notebook opened (not the text editor): the document's cells are notebook cells.
    expect(page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible(timeout=60_000)
    page.wait_for_function(IDLE, timeout=90_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    _wait_idle(page)
    readout = page.locator(".widget-slider .widget-readout").first
    expect(readout).to_have_text("0.80", timeout=120_000)  # the notebook's default, untouched by Run All
    effective = page.locator(".widget-html", has_text="effective threshold").first
    expect(effective).to_contain_text("compressor 102,400 tokens", timeout=60_000)
    image = page.locator(".jp-OutputArea-output img").first
    expect(image).to_be_visible(timeout=60_000)
    before = image.get_attribute("src")

    handle = page.locator(".widget-slider .noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    expect(readout).to_have_text("0.90", timeout=30_000)
    _wait_idle(page)
    expect(effective).to_contain_text("compressor 115,200 tokens", timeout=90_000)
    expect(image).not_to_have_attribute("src", before or "", timeout=90_000)
    table = page.locator(".jp-OutputArea-output table").first
    expect(table).to_contain_text("recent_turns")
    # Kept for a person to look at: set CONTEXTLAB_UI_SHOTS to a folder to keep it after the run.
    page.screenshot(path=str(Path(os.environ.get("CONTEXTLAB_UI_SHOTS") or tmp_path) / "contextlab-dashboard.png"))
