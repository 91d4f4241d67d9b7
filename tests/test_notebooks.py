"""The five notebooks: committed as ``.ipynb`` (so a double-click opens a notebook in any front end)
paired with a ``py:percent`` twin that must stay in sync; each executes in the suite, followed by
checks that live here, outside the cells a user runs ("Run All" never moves the user's dashboard)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / "notebooks"
NAMES = ["01_quickstart", "02_benchmark_engines", "03_cache_and_cost", "04_prototype_engine", "05_dashboard"]
CELL_TIMEOUT_S = 600
NOTEBOOK_TIMEOUT_S = 1200

# Hidden checks, run in the notebook's kernel after its last cell (never saved into the notebook).
CHECKS: dict[str, str] = {
    "01_quickstart": """
by_engine = summaries.set_index("engine")
assert by_engine.loc["passthrough", "compactions"] == 0
assert by_engine.loc["passthrough", "overflows"] > 0  # the window is too small for the whole conversation
assert by_engine.loc["compressor", "compactions"] > 0 and by_engine.loc["compressor", "overflows"] == 0
assert by_engine.loc["compressor", "threshold_tokens"] == int(128_000 * 0.9)  # the knob is not clamped here
assert by_engine.loc["compressor", "prompt_tokens_max"] < 128_000
assert (summaries["violations"] == 0).all()
""",
    "02_benchmark_engines": """
assert len(result.failed) == 0, result.failed
assert sorted(board["engine"]) == sorted(engines) and len(engines) >= 7
assert board["rank"].tolist() == list(range(1, len(board) + 1))
sound = board[board["sound"]]
costs = sound["cost $"].str.replace(",", "").astype(float).tolist()
assert costs == sorted(costs) and len(sound) >= 2
assert set(result.summaries["context_length"]) == {int(window)}
if folder is not None:
    assert len(transcripts) == 8
""",
    "03_cache_and_cost": """
assert len(summaries) == 2 * len(POLICIES) and (summaries["status"] == "ok").all()
hit = table.set_index(["policy", "engine", "provider"])["hit rate"]
assert hit.loc[("none", "passthrough", "anthropic:claude-sonnet-5-5")] == 0
assert hit.loc[("system_and_3", "passthrough", "anthropic:claude-sonnet-5-5")] > 0.5
assert hit.loc[("system_and_3", "compressor", "anthropic:claude-sonnet-5-5")] < hit.loc[
    ("system_and_3", "passthrough", "anthropic:claude-sonnet-5-5")
]
assert "compaction" in {t.get_text() for t in top.texts}
""",
    "04_prototype_engine": """
assert report.ok, report.format()
by_engine = summaries.set_index("engine")
assert by_engine.loc["sliding_window", "compactions"] > 0
assert by_engine.loc["sliding_window", "violations"] == 0, "the safe cut must never orphan a tool result"
assert by_engine.loc["sliding_window", "prompt_tokens_total"] < by_engine.loc["passthrough", "prompt_tokens_total"]
assert wide.summary["prompt_tokens_total"] > by_engine.loc["sliding_window", "prompt_tokens_total"]
assert "sliding_window" in set(engine_table(summaries)["engine"])
""",
    "05_dashboard": """
before = dashboard.result.summaries.set_index("engine")
assert before.loc["compressor", "threshold_tokens"] == 102_400
assert "compressor</b> 102,400 tokens (80% of 128,000)" in dashboard.readout.value
dashboard.threshold.value = 0.95
after = dashboard.result.summaries.set_index("engine")
assert after.loc["compressor", "threshold_tokens"] == 121_600
assert after.loc["compressor", "prompt_tokens_total"] != before.loc["compressor", "prompt_tokens_total"]
assert after.loc["recent_turns", "prompt_tokens_total"] > before.loc["recent_turns", "prompt_tokens_total"]
dashboard.threshold.value = 0.5  # below 0.75 the host raises the compressor's setting
assert dashboard.result.summaries.set_index("engine").loc["compressor", "threshold_tokens"] == 96_000
assert "the host&#x27;s floor" in dashboard.readout.value
dashboard.focus.value = "order_id"
manual = dashboard.result.compactions.query("trigger == 'manual'")
assert set(manual["focus_topic"]) == {"order_id"}
assert manual.set_index("engine").loc["compressor", "outcome"] == "committed"
dashboard.compress_now.click()
assert dashboard.preview["compressor"].of("dropped") and dashboard.preview["compressor"].focus == "order_id"
""",
}


def test_five_notebooks_each_a_pair() -> None:
    assert sorted(p.stem for p in FOLDER.glob("*.py")) == NAMES
    assert sorted(p.stem for p in FOLDER.glob("*.ipynb")) == NAMES
    assert "ipynb,py:percent" in (FOLDER / "jupytext.toml").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_pair_in_sync_and_committed_clean(name: str) -> None:
    """The .ipynb and its .py twin hold the same cells; the .ipynb carries no outputs or widget state."""
    source = jupytext.read(FOLDER / f"{name}.py")
    committed = nbformat.read(FOLDER / f"{name}.ipynb", as_version=4)
    cells = [(c.cell_type, c.source.strip()) for c in source.cells]
    assert cells == [(c.cell_type, c.source.strip()) for c in committed.cells], (
        f"notebooks/{name}.ipynb and .py differ: run `jupytext --sync notebooks/{name}.py`"
    )
    for cell in committed.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}.ipynb: strip the outputs"
    assert "widgets" not in committed.metadata
    assert committed.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_opens_with_what_it_shows_and_how_long(name: str) -> None:
    first = nbformat.read(FOLDER / f"{name}.ipynb", as_version=4).cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    assert "**What it shows:**" in first.source and "**How long:**" in first.source


# Runs in a child process: nbclient shares the test process's asyncio and zmq state with every test that
# ran before it. The dashboard notebook's kernel also went idle while the client waited for the cell
# timeout in a fresh process (every other run with ipykernel 6.31 and 7.4 alike, 2026-12-01): the
# reply had arrived, and a long asyncio poll of the zmq socket returned it only at its timeout. The
# client's channels therefore poll in slices of a second (short_polls).
EXECUTE = """
import queue, sys, time, nbclient, nbformat
path, out, timeout, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]


def short_polls(get_msg):
    # A long asyncio poll on a zmq socket sometimes missed the wake-up of a message that had arrived
    # (the dashboard's execute reply came at once; the poll returned it only at its 600 s timeout).
    # Polls of at most a second re-check the socket, so such a reply costs a second, not the timeout.
    async def get(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = 1.0 if left is None else min(1.0, left)
            try:
                return await get_msg(timeout=step)
            except queue.Empty:
                if left is not None and left <= step:
                    raise

    return get


def patch_channels(notebook):
    for channel in (client.kc.shell_channel, client.kc.iopub_channel):
        channel.get_msg = short_polls(channel.get_msg)


notebook = nbformat.read(path, as_version=4)
resources = {"metadata": {"path": folder}}
client = nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3", resources=resources)
client.on_notebook_start = patch_channels
try:
    client.execute()
except nbclient.exceptions.CellExecutionError as error:
    print(error, file=sys.stderr)
    sys.exit(3)
finally:
    nbformat.write(notebook, out)
"""


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name: str, tmp_path: Path) -> None:
    # The kernel inherits this environment: no progress bars in the logs.
    env = {**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    notebook = nbformat.read(FOLDER / f"{name}.ipynb", as_version=4)
    user_cells = len(notebook.cells)
    notebook.cells.append(nbformat.v4.new_code_cell(CHECKS[name]))
    source, executed = tmp_path / f"{name}.ipynb", tmp_path / f"{name}.out.ipynb"
    nbformat.write(notebook, source)
    started = time.perf_counter()
    command = [sys.executable, "-c", EXECUTE, str(source), str(executed), str(CELL_TIMEOUT_S), str(FOLDER)]
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=NOTEBOOK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: did not finish in {NOTEBOOK_TIMEOUT_S} s")
    if proc.returncode != 0:
        pytest.fail(f"{name}: a cell failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    notebook = nbformat.read(executed, as_version=4)
    print(f"{name}: executed in {time.perf_counter() - started:.1f} s")
    user = [c for c in notebook.cells[:user_cells] if c.cell_type == "code"]
    outputs = [o for cell in user for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    if name != "05_dashboard":
        assert any("image/png" in o.get("data", {}) for o in outputs), "no figure was displayed"
        return
    # The dashboard's Output widget re-rendered into the saved widget state (a PNG per refresh).
    state = notebook.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    rendered = [
        m
        for m in state.get("state", {}).values()
        if m.get("model_name") == "OutputModel"
        and any("image/png" in o.get("data", {}) for o in m.get("state", {}).get("outputs", []))
    ]
    assert rendered, "the dashboard Output shows no plot"
    assert json.dumps(notebook.cells[1].outputs).count("application/vnd.jupyter.widget-view+json") == 1
