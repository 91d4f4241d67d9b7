"""Every ``notebooks/*.py`` (jupytext py:percent) is converted to a notebook and executed with
nbclient; any cell error fails the test and names the cell."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
CELL_TIMEOUT_S = 300


def test_notebooks_exist() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.py",
        "02_cache_and_cost.py",
        "03_prototype_engine.py",
        "04_dashboard.py",
    ]


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The notebooks read only the bundled datasets; the kernel inherits this environment, so no
    # progress bars in the logs.
    monkeypatch.setenv("TQDM_DISABLE", "1")
    notebook = jupytext.read(source)
    client = nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(source.parent)}},
    )
    started = time.perf_counter()
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{source.name}: a cell failed:\n{error}")
    elapsed = time.perf_counter() - started
    # Reported, not asserted: speed belongs in benchmarks/; the per-cell timeout catches hangs.
    print(f"{source.name}: executed in {elapsed:.1f} s ({', '.join(_cell_times(notebook))})")
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    if source.stem != "04_dashboard":
        assert any("image/png" in o.get("data", {}) for o in outputs), "no figure was displayed"
    else:
        # The dashboard's Output widget re-rendered into the saved widget state (a PNG per refresh).
        state = notebook.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
        models = state.get("state", {}).values()
        rendered = [
            m
            for m in models
            if m.get("model_name") == "OutputModel"
            and any("image/png" in o.get("data", {}) for o in m.get("state", {}).get("outputs", []))
        ]
        assert rendered, "the dashboard Output shows no plot"


def _cell_times(notebook: object) -> list[str]:
    """Per-cell wall time from nbclient's execution metadata, to see where a slow run went."""
    from datetime import datetime

    times = []
    for index, cell in enumerate(notebook.cells):  # type: ignore[attr-defined]
        meta = cell.get("metadata", {}).get("execution", {})
        start, end = meta.get("iopub.status.busy"), meta.get("shell.execute_reply")
        if start and end:
            seconds = (
                datetime.fromisoformat(end.rstrip("Z")) - datetime.fromisoformat(start.rstrip("Z"))
            ).total_seconds()
            times.append(f"cell {index}: {seconds:.1f} s")
    return times


def test_generated_notebooks_are_not_committed() -> None:
    """Only the py:percent sources are tracked; the .ipynb files are generated and git-ignored."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(
        ["git", "ls-files", "notebooks"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked and not [name for name in tracked if name.endswith(".ipynb")]
    ignored = subprocess.run(["git", "check-ignore", "-q", "notebooks/01_quickstart.ipynb"], cwd=REPO)
    assert ignored.returncode == 0, "notebooks/*.ipynb must be git-ignored"
