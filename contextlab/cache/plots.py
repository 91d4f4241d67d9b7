"""The calibration figure: recorded vs simulated cache reads per request."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def plot_calibration(frame: pd.DataFrame, ax: Axes | None = None, *, title: str | None = None) -> Figure:
    """Recorded and simulated cache-read tokens per request, with the prompt size for scale.

    Args:
        frame: A calibration frame (:attr:`contextlab.calibrate.Calibration.frame`).
        ax: Axes to draw on; a new figure when None.
        title: Figure title.
    """
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        figure, ax = plt.subplots(figsize=(10, 4.5))
    else:
        figure = ax.figure  # type: ignore[assignment]
    x = frame["request"]
    ax.plot(x, frame["recorded_total"], color="0.75", lw=1, label="recorded prompt")
    ax.plot(x, frame["recorded_read"], color="tab:blue", lw=1.4, label="recorded cache read")
    ax.plot(x, frame["simulated_read"], color="tab:orange", lw=1.2, ls="--", label="simulated cache read")
    ax.set_xlabel("request")
    ax.set_ylabel("tokens")
    ax.legend(loc="upper left", fontsize="small")
    if title:
        ax.set_title(title)
    figure.tight_layout()
    return figure  # type: ignore[return-value]
