"""An ipywidgets dashboard: a thin ``observe`` + ``Output`` layer over :func:`contextlab.bench.bench`
and :mod:`contextlab.plots`.

Every control change re-runs :meth:`Dashboard.refresh`, which replays the chosen transcript through
the chosen engines and redraws. The last result stays on the object (``dashboard.result``), so a
notebook cell or a test can set ``dashboard.threshold.value = 0.5`` and check what the library
computed, with no browser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import pandas as pd
from IPython.display import HTML, Image, display
from matplotlib.figure import Figure

from contextlab.bench import BenchResult, bench, engine_label
from contextlab.engines import EngineSpec, resolve_engine
from contextlab.errors import ConfigError, ContextLabError
from contextlab.host.observers import RequestObserver
from contextlab.host.settings import HostSettings
from contextlab.host.turns import plan_turns
from contextlab.plots import figure_png, plot_prompt_tokens
from contextlab.tokens import ExactCounter
from contextlab.transcripts import Transcript

DEFAULT_CONTEXT_LENGTHS: tuple[int, ...] = (8_000, 16_000, 32_000, 128_000, 200_000)
SUMMARY_COLUMNS: tuple[str, ...] = (
    "engine",
    "status",
    "requests",
    "compactions",
    "prompt_tokens_total",
    "prompt_tokens_max",
    "prefix_share",
    "cache_hit_rate",
    "cost_usd",
    "error",
)


class Dashboard:
    """Transcript picker, engine picker, threshold slider, window selector and a focus-topic box.

    Args:
        transcripts: Transcripts to choose from (a mapping gives them display names).
        engines: Engine names or ``ContextEngine`` classes offered in the engine picker.
        selected: Engines selected at start (default: all).
        settings: Base host settings (the controls override ``threshold_percent``,
            ``context_length`` and ``manual_compactions``).
        context_lengths: Options of the window selector.
        threshold_percent: Initial slider value.
        context_length: Initial window (default: the first option).
        focus_turn: Initial turn at which a focus topic is applied as ``/compress <focus>``.
        observers: Measurement models for every replay (a ``CacheObserver`` adds cache hit rate
            and cost to the table).
    """

    def __init__(
        self,
        transcripts: Mapping[str, Transcript] | Sequence[Transcript],
        engines: Sequence[EngineSpec],
        *,
        selected: Sequence[EngineSpec] | None = None,
        settings: HostSettings | None = None,
        context_lengths: Sequence[int] = DEFAULT_CONTEXT_LENGTHS,
        threshold_percent: float = 0.75,
        context_length: int | None = None,
        focus_turn: int = 1,
        observers: Sequence[RequestObserver] = (),
    ) -> None:
        named = dict(transcripts) if isinstance(transcripts, Mapping) else {t.transcript_id: t for t in transcripts}
        if not named:
            raise ConfigError("Dashboard: no transcripts given")
        if not engines:
            raise ConfigError("Dashboard: no engines given")
        self.transcripts: dict[str, Transcript] = named
        self.engines: dict[str, EngineSpec] = {display_name(e): e for e in engines}
        if len(self.engines) != len(engines):
            raise ConfigError("Dashboard: two engines share a name")
        self.settings = settings or HostSettings()
        self.observers = list(observers)
        self.counter = ExactCounter(self.settings.encoding)  # one token memo for every refresh
        self.result: BenchResult | None = None
        self.figure: Figure | None = None
        self.error: str | None = None
        self.refreshes = 0

        chosen = [display_name(e) for e in selected] if selected is not None else list(self.engines)
        lengths = sorted({int(v) for v in context_lengths} | ({int(context_length)} if context_length else set()))
        self.transcript = widgets.Dropdown(options=list(named), value=next(iter(named)), description="transcript")
        self.engine_picker = widgets.SelectMultiple(
            options=list(self.engines),
            value=tuple(chosen),
            description="engines",
            rows=min(6, len(self.engines)),
        )
        # continuous_update=False: a replay per slider tick would queue dozens of replays while dragging.
        self.threshold = widgets.FloatSlider(
            value=threshold_percent,
            min=0.05,
            max=1.0,
            step=0.05,
            description="threshold",
            readout_format=".2f",
            continuous_update=False,
        )
        self.context_length = widgets.Dropdown(
            options=[(f"{v:,}", v) for v in lengths],
            value=int(context_length or lengths[0]),
            description="context",
        )
        self.focus = widgets.Text(
            value="", placeholder="focus topic for /compress", description="focus", continuous_update=False
        )
        self.focus_turn = widgets.BoundedIntText(value=focus_turn, min=0, max=10_000, description="at turn")
        self._syncing = False
        self._fit_focus_turn()
        self.out = widgets.Output()
        for control in (
            self.transcript,
            self.engine_picker,
            self.threshold,
            self.context_length,
            self.focus,
            self.focus_turn,
        ):
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.transcript, self.context_length]),
                widgets.HBox([self.engine_picker, widgets.VBox([self.threshold, self.focus, self.focus_turn])]),
                self.out,
            ]
        )
        self.refresh()

    def _ipython_display_(self) -> None:
        _show(self.widget)

    def _on_change(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        if change.get("owner") is self.transcript:
            self._fit_focus_turn()
        self.refresh()

    def _fit_focus_turn(self) -> None:
        """Bound the turn box by the chosen transcript's turns (a later turn would silently do nothing)."""
        turns = len(plan_turns(self.transcripts[self.transcript.value].messages))
        self._syncing = True  # clamping the value must not start a second replay
        try:
            self.focus_turn.max = max(0, turns - 1)
        finally:
            self._syncing = False

    def current_settings(self) -> HostSettings:
        """Host settings for the current control values."""
        focus = self.focus.value.strip()
        manual = {int(self.focus_turn.value): focus} if focus else {}
        return self.settings.with_(
            threshold_percent=float(self.threshold.value),
            context_length=int(self.context_length.value),
            manual_compactions={**self.settings.manual_compactions, **manual},
        )

    def run(self) -> BenchResult:
        """Replay the selected transcript through the selected engines (no drawing)."""
        engines = [self.engines[name] for name in self.engine_picker.value]
        if not engines:
            raise ConfigError("select at least one engine")
        transcript = self.transcripts[self.transcript.value]
        return bench(
            [transcript],
            engines,
            settings=self.current_settings(),
            observers=self.observers,
            workers=1,
            progress=False,
            counter=self.counter,
        )

    def refresh(self) -> None:
        """Replay, redraw the prompt-token plot and the summary table in the Output widget."""
        self.refreshes += 1
        try:
            result = self.run()
        except ContextLabError as error:
            self.error, self.result, self.figure = str(error), None, None
            with self.out:
                self.out.clear_output(wait=True)
                _show_html(f"<b>error:</b> {_escape(str(error))}")
            return
        self.error, self.result = None, result
        table = summary_table(result.summaries)
        self.figure = plot_prompt_tokens(result.trace, result.compactions) if len(result.trace) else None
        with self.out:
            self.out.clear_output(wait=True)
            if self.figure is not None:
                _show_png(figure_png(self.figure))
            _show_html(table.to_html(index=False, float_format=lambda v: f"{v:,.3f}"))


def display_name(spec: EngineSpec) -> str:
    """The name runs of ``spec`` carry in the frames (a class's ``name``, when it can be built bare)."""
    if isinstance(spec, type):
        try:
            return str(resolve_engine(spec).name)
        except Exception:  # needs parameters or fails: its class name is the best label left
            return spec.__name__
    return engine_label(spec)


def summary_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """The columns the dashboard shows, in order (those present)."""
    shown = [c for c in SUMMARY_COLUMNS if c in summaries.columns]
    if "error" in shown and summaries["error"].isna().all():
        shown.remove("error")  # a column of "None" says nothing
    return summaries[shown]


# IPython.display is untyped; these three wrappers keep the ignores in one place.
def _show(obj: object) -> None:
    display(obj)  # type: ignore[no-untyped-call]


def _show_html(markup: str) -> None:
    _show(HTML(markup))  # type: ignore[no-untyped-call]


def _show_png(data: bytes) -> None:
    _show(Image(data=data, format="png"))  # type: ignore[no-untyped-call]


def _escape(text: str) -> str:
    import html

    return html.escape(text)
