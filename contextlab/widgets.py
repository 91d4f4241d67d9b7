"""An ipywidgets dashboard: a thin ``observe`` + ``Output`` layer over :func:`contextlab.bench.bench`,
:mod:`contextlab.focus` and :mod:`contextlab.plots`.

Every control change re-runs :meth:`Dashboard.refresh`, which replays the chosen transcript through
the chosen engines (results are memoized per setting, so going back is instant) and redraws four
panels: prompt tokens with each engine's effective threshold and compaction markers, cache hit rate,
cumulative cost and fact retention. The readout says what threshold each engine really used. The
last result stays on the object (``dashboard.result``), so a notebook cell or a test can set
``dashboard.threshold.value = 0.9`` and check what the library computed, with no browser. Only
standard ipywidgets are used, so it works in JupyterLab and in the classic notebook alike.
"""

from __future__ import annotations

import html
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import pandas as pd
from IPython.display import HTML, Image, display
from matplotlib.figure import Figure

from contextlab import schema
from contextlab.bench import BenchResult, bench, engine_label
from contextlab.engines import EngineSpec
from contextlab.errors import ConfigError, ContextLabError
from contextlab.focus import CompressPreview, compress_preview, suggest_focus_topics
from contextlab.host.observers import RequestObserver
from contextlab.host.settings import HostSettings
from contextlab.host.turns import plan_turns
from contextlab.plots import figure_png, plot_dashboard
from contextlab.thresholds import threshold_label
from contextlab.tokens import ExactCounter
from contextlab.transcripts import Transcript

DEFAULT_CONTEXT_LENGTHS: tuple[int, ...] = (8_000, 16_000, 32_000, 128_000, 200_000)
DEFAULT_PROVIDERS: tuple[str, ...] = (
    "anthropic:claude-sonnet-5-5",
    "openai:gpt-5.5",
    "gemini:gemini-3-pro",
    "deepseek:deepseek-flash",
)
"""Cache models offered by the provider picker (each has a price row), plus "none"."""

NO_PROVIDER = "none"
SUMMARY_COLUMNS: tuple[str, ...] = schema.declared(
    "summary",
    "engine",
    "status",
    "threshold_tokens",
    "compactions",
    "prompt_tokens_total",
    "prompt_tokens_max",
    "cache_hit_rate",
    "cost_usd",
    "fact_retention_final",
    "prefix_share",
    "error",
)
MEMO_SIZE = 32
"""Replays kept per dashboard (one per distinct setting), so moving a control back costs no replay."""

FIGURE_DPI = 80


class Dashboard:
    """Transcript, engine and provider pickers, a threshold slider with the effective threshold, a
    window selector, the host the replay follows (newest upstream or PyPI 0.19.0), a focus-topic box
    with suggestions and a "compress now" preview.

    Args:
        transcripts: Transcripts to choose from (a mapping gives them display names).
        engines: Engine names or ``ContextEngine`` classes offered in the engine picker.
        selected: Engines selected at start (default: all).
        settings: Base host settings (the controls override ``threshold_percent``,
            ``context_length``, ``hermes_version`` and ``manual_compactions``).
        context_lengths: Options of the window selector.
        threshold_percent: Initial slider value.
        context_length: Initial window (default: the first option).
        focus_turn: Initial turn at which a focus topic is applied as ``/compress <focus>``.
        observers: Measurement models added to every replay.
        providers: Cache models the provider picker offers (``PROVIDER:MODEL``; "none" is added).
        provider: Initial provider (default: "none").
        cache_policy: Cache-marker placement policy for the provider's cache model.
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
        providers: Sequence[str] = DEFAULT_PROVIDERS,
        provider: str | None = None,
        cache_policy: str = "system_and_3",
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
        provider_options = [NO_PROVIDER, *providers]
        if provider is not None and provider not in provider_options:
            raise ConfigError(f"Dashboard: provider {provider!r} is not one of {', '.join(provider_options)}")
        self.settings = settings or HostSettings()
        self.observers = list(observers)
        self.cache_policy = cache_policy
        self.counter = ExactCounter(self.settings.encoding)  # one token memo for every refresh
        self.result: BenchResult | None = None
        self.figure: Figure | None = None
        self.error: str | None = None
        self.preview: dict[str, CompressPreview] = {}
        self.refreshes = 0
        self.replays = 0
        self._memo: OrderedDict[tuple[Any, ...], BenchResult] = OrderedDict()
        self._cache_observers: dict[str, RequestObserver] = {}

        chosen = [display_name(e) for e in selected] if selected is not None else list(self.engines)
        lengths = sorted({int(v) for v in context_lengths} | ({int(context_length)} if context_length else set()))
        self.transcript = widgets.Dropdown(options=list(named), value=next(iter(named)), description="transcript")
        self.engine_picker = widgets.SelectMultiple(
            options=list(self.engines),
            value=tuple(chosen),
            description="engines",
            rows=min(6, len(self.engines)),
        )
        self.provider = widgets.Dropdown(
            options=provider_options,
            value=provider or NO_PROVIDER,
            description="cache model",
            style={"description_width": "initial"},
        )
        # continuous_update=False: a replay per slider tick would queue dozens of replays while dragging.
        self.threshold = widgets.FloatSlider(
            value=threshold_percent,
            min=0.05,
            max=1.0,
            step=0.05,
            description="threshold %",
            readout_format=".2f",
            continuous_update=False,
        )
        self.context_length = widgets.Dropdown(
            options=[(f"{v:,}", v) for v in lengths],
            value=int(context_length or lengths[0]),
            description="context",
        )
        self.host = widgets.Dropdown(
            options=[("newest", "newest"), ("0.19.0 (PyPI)", "0.19.0")],
            value=self.settings.hermes_version,
            description="host",
        )
        self.readout = widgets.HTML(value="")
        self.focus = widgets.Combobox(
            value="",
            options=[],
            placeholder="focus topic (suggestions from the transcript)",
            description="focus",
            ensure_option=False,
            continuous_update=False,
        )
        self.focus_turn = widgets.BoundedIntText(value=focus_turn, min=0, max=10_000, description="at turn")
        self.compress_now = widgets.Button(description="compress now", tooltip="preview what each engine keeps")
        self.compress_now.on_click(lambda _button: self.run_preview())
        self._syncing = False
        self._fit_transcript()
        self.out = widgets.Output()
        self.preview_out = widgets.Output()
        for control in (
            self.transcript,
            self.engine_picker,
            self.provider,
            self.threshold,
            self.context_length,
            self.host,
            self.focus,
            self.focus_turn,
        ):
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.transcript, self.context_length, self.provider, self.host]),
                widgets.HBox(
                    [
                        self.engine_picker,
                        widgets.VBox([self.threshold, self.focus, widgets.HBox([self.focus_turn, self.compress_now])]),
                    ]
                ),
                self.readout,
                self.preview_out,
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
            self._fit_transcript()
        self.refresh()

    def _fit_transcript(self) -> None:
        """Bound the turn box by the chosen transcript's turns (a later turn would silently do nothing)
        and offer that transcript's focus-topic suggestions."""
        transcript = self.transcripts[self.transcript.value]
        turns = len(plan_turns(transcript.messages))
        self._syncing = True  # clamping the value must not start a second replay
        try:
            self.focus_turn.max = max(0, turns - 1)
            self.focus.options = suggest_focus_topics(transcript)
        finally:
            self._syncing = False

    def current_settings(self) -> HostSettings:
        """Host settings for the current control values."""
        focus = self.focus.value.strip()
        manual = {int(self.focus_turn.value): focus} if focus else {}
        return self.settings.with_(
            threshold_percent=float(self.threshold.value),
            context_length=int(self.context_length.value),
            hermes_version=str(self.host.value),
            manual_compactions={**self.settings.manual_compactions, **manual},
        )

    def current_observers(self) -> list[RequestObserver]:
        """The base observers plus the chosen provider's cache model (built once per provider)."""
        name = self.provider.value
        if name == NO_PROVIDER:
            return list(self.observers)
        if name not in self._cache_observers:
            from contextlab.cache import CacheObserver

            self._cache_observers[name] = CacheObserver([name], self.cache_policy)
        return [*self.observers, self._cache_observers[name]]

    def run(self) -> BenchResult:
        """Replay the selected transcript through the selected engines (no drawing; memoized)."""
        names = tuple(self.engine_picker.value)
        if not names:
            raise ConfigError("select at least one engine")
        settings = self.current_settings()
        key = (self.transcript.value, names, self.provider.value, repr(settings))
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        result = bench(
            [self.transcripts[self.transcript.value]],
            [self.engines[name] for name in names],
            settings=settings,
            observers=self.current_observers(),
            workers=1,
            progress=False,
            counter=self.counter,
        )
        self.replays += 1
        self._memo[key] = result
        while len(self._memo) > MEMO_SIZE:
            self._memo.popitem(last=False)
        return result

    def refresh(self) -> None:
        """Replay, then redraw the readout, the four panels and the summary table."""
        self.refreshes += 1
        try:
            result = self.run()
        except ContextLabError as error:
            self.error, self.result, self.figure = str(error), None, None
            self.readout.value = f"<b>error:</b> {html.escape(str(error))}"
            with self.out:
                self.out.clear_output(wait=True)
            return
        self.error, self.result = None, result
        self.readout.value = threshold_readout(result.summaries)
        self.figure = plot_dashboard(result.trace, result.compactions) if len(result.trace) else None
        table = summary_table(result.summaries)
        with self.out:
            self.out.clear_output(wait=True)
            if self.figure is not None:
                _show_png(figure_png(self.figure, dpi=FIGURE_DPI))
            _show_html(format_summary(table).to_html(index=False))

    def run_preview(self) -> dict[str, CompressPreview]:
        """ "compress now": each selected engine's forced ``compress`` with the focus topic on the
        recorded history before the chosen turn; shows what it kept, dropped and added."""
        transcript = self.transcripts[self.transcript.value]
        settings = self.current_settings()
        focus = self.focus.value.strip()
        previews: dict[str, CompressPreview] = {}
        errors: dict[str, str] = {}
        for name in self.engine_picker.value:
            try:
                previews[name] = compress_preview(
                    transcript, self.engines[name], settings, turn=int(self.focus_turn.value), focus=focus
                )
            except Exception as error:  # one failing engine must not hide the others' previews
                errors[name] = f"{type(error).__name__}: {error}"
        self.preview = previews
        with self.preview_out:
            self.preview_out.clear_output(wait=True)
            _show_html(preview_html(previews, errors))
        return previews


def display_name(spec: EngineSpec) -> str:
    """The name runs of ``spec`` carry in the frames (:func:`contextlab.engines.engine_label`)."""
    return engine_label(spec)


def threshold_readout(summaries: pd.DataFrame) -> str:
    """HTML: each engine's effective threshold, and why when it is not threshold_percent x window."""
    parts = []
    for _, row in summaries.iterrows():
        if pd.isna(row.get("threshold_tokens")):
            continue
        note = str(row.get("threshold_note") or "")
        label = threshold_label(int(row["threshold_tokens"]), int(row.get("context_length") or 0))
        reason = f" <i>({html.escape(note.partition(': ')[2])})</i>" if note else ""
        parts.append(f"<b>{html.escape(str(row['engine']))}</b> {html.escape(label)}{reason}")
    return "effective threshold: " + " &middot; ".join(parts) if parts else ""


def summary_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """The columns the dashboard shows, in order (those present)."""
    shown = [c for c in SUMMARY_COLUMNS if c in summaries.columns]
    if "error" in shown and summaries["error"].isna().all():
        shown.remove("error")  # a column of "None" says nothing
    return summaries[shown]


def format_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Shares as percentages, money in dollars, counts with thousands separators (for display)."""
    out = table.copy()
    for column in out.columns:
        if schema.unit_of(column) in ("share", "usd"):
            out[column] = out[column].map(lambda v, c=column: schema.format_value(c, v))
        elif pd.api.types.is_integer_dtype(out[column]):
            out[column] = out[column].map(lambda v: f"{v:,}")
    return out.rename(columns=lambda c: c.replace("_", " "))


PREVIEW_ROWS = 12
"""Dropped and added rows listed per engine (the rest are counted)."""


def preview_html(previews: Mapping[str, CompressPreview], errors: Mapping[str, str] | None = None) -> str:
    """HTML for the "compress now" previews: counts and tokens kept / dropped / added, and the rows."""
    blocks = []
    for name, preview in previews.items():
        counts = []
        for status in ("kept", "dropped", "added"):
            rows = preview.of(status)
            counts.append(f"{status} {len(rows)} ({sum(r.tokens for r in rows):,} tokens)")
        head = (
            f"<b>{html.escape(name)}</b>: compress before turn {preview.turn}"
            f"{' with focus ' + html.escape(repr(preview.focus)) if preview.focus else ''}: "
            f"{preview.tokens_before:,} → {preview.tokens_after:,} tokens; {', '.join(counts)}"
        )
        if preview.note:
            head += f" <i>({html.escape(preview.note)})</i>"
        listed = [*preview.of("added"), *preview.of("dropped")][:PREVIEW_ROWS]
        body = "".join(
            f"<tr><td>{r.status}</td><td>{'' if r.index < 0 else r.index}</td><td>{html.escape(r.role)}</td>"
            f"<td>{r.tokens:,}</td><td>{html.escape(r.text[:120])}</td></tr>"
            for r in listed
        )
        table = (
            f"<table><tr><th>what</th><th>#</th><th>role</th><th>tokens</th><th>text</th></tr>{body}</table>"
            if body
            else ""
        )
        blocks.append(f"<div>{head}{table}</div>")
    blocks.extend(f"<div><b>{html.escape(n)}</b>: failed: {html.escape(e)}</div>" for n, e in (errors or {}).items())
    return "".join(blocks) or "<i>no engine selected</i>"


# IPython.display is untyped; these three wrappers keep the ignores in one place.
def _show(obj: object) -> None:
    display(obj)  # type: ignore[no-untyped-call]


def _show_html(markup: str) -> None:
    _show(HTML(markup))  # type: ignore[no-untyped-call]


def _show_png(data: bytes) -> None:
    _show(Image(data=data, format="png"))  # type: ignore[no-untyped-call]
