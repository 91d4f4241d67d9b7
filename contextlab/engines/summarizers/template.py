"""Summary templates: which sections a summary has, in which order, and how each is filled.

Two templates ship:

* :data:`HOST_TEMPLATE`: the Hermes compressor's headings (``host-contract.md`` §2d step 5), used by
  the built-in ``compressor``.
* :data:`ENGINES_TEMPLATE`: the section order of the offline extractive summariser in
  ``engines.md`` §5.0 (user requests, files and artifacts, errors, decisions, identifier index,
  timeline, current state), used by the ``summary``/``hybrid``/``lcm`` engines.

A section names a *source* (an extractor in :mod:`contextlab.engines.summarizers.extractive`) and
its trimming rules; an LLM summarizer only uses the headings.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE_ORDER: tuple[str, ...] = (
    "snapshot",
    "goal",
    "constraints",
    "actions",
    "current_state",
    "in_progress",
    "errors",
    "decisions",
    "questions",
    "user_requests",
    "files",
    "remaining",
    "identifiers",
    "timeline",
)
"""What the extractive summarizer extracts, in the order it fills its sections (template sources)."""

SOURCES: frozenset[str] = frozenset(SOURCE_ORDER)
"""Extractor names a :class:`SectionSpec` may use."""


@dataclass(frozen=True)
class SectionSpec:
    """One section of a summary.

    Attributes:
        heading: The Markdown heading text (rendered as ``## heading``).
        source: Which extractor fills it (one of :data:`SOURCES`).
        item_chars: Each item is cut to this many characters.
        share: At most this fraction of the budget (None: no own cap).
        max_items: Keep at most this many items (the newest), before budget trimming.
        trim_rank: Lower ranks are trimmed first when over budget; None is never trimmed by item
            (only hard-cut as a last resort).
        numbered: Render ``1. item`` instead of ``- item``.
        newest_first: Render items newest first (user requests are quoted newest first).
        single: ``"last"``/``"first"``: the section holds one value; the newest (or, for ``"first"``,
            the earliest, including a previous summary's) wins instead of merging.
    """

    heading: str
    source: str
    item_chars: int = 200
    share: float | None = None
    max_items: int | None = None
    trim_rank: int | None = 50
    numbered: bool = False
    newest_first: bool = False
    single: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown summary source {self.source!r}; expected one of {sorted(SOURCES)}")


@dataclass(frozen=True)
class SummaryTemplate:
    """An ordered set of sections; ``fallback_source`` receives unrecognised previous-summary lines."""

    name: str
    sections: tuple[SectionSpec, ...]
    fallback_source: str = "timeline"

    @property
    def headings(self) -> list[str]:
        return [s.heading for s in self.sections]

    def section_for_heading(self, heading: str) -> SectionSpec | None:
        wanted = heading.strip().lower()
        for section in self.sections:
            if section.heading.lower() == wanted:
                return section
        return None


HOST_TEMPLATE = SummaryTemplate(
    name="host",
    sections=(
        SectionSpec("Historical Task Snapshot", "snapshot", item_chars=1600, trim_rank=None, single="last"),
        SectionSpec("Goal", "goal", item_chars=400, trim_rank=None, single="first"),
        SectionSpec("Constraints & Preferences", "constraints", item_chars=200, trim_rank=70, max_items=20),
        SectionSpec("Completed Actions", "actions", item_chars=200, trim_rank=20, numbered=True),
        SectionSpec("Active State", "current_state", item_chars=600, trim_rank=None, single="last"),
        SectionSpec("Historical In-Progress State", "in_progress", item_chars=200, trim_rank=60, max_items=8),
        SectionSpec("Blocked", "errors", item_chars=160, trim_rank=40, max_items=30),
        SectionSpec("Key Decisions", "decisions", item_chars=200, trim_rank=30, max_items=40),
        SectionSpec("Resolved Questions", "questions", item_chars=240, trim_rank=25, max_items=20),
        SectionSpec(
            "Historical Pending User Asks",
            "user_requests",
            item_chars=400,
            share=0.30,
            trim_rank=80,
            newest_first=True,
        ),
        SectionSpec("Relevant Files", "files", item_chars=200, trim_rank=45, max_items=60),
        SectionSpec("Historical Remaining Work", "remaining", item_chars=200, trim_rank=35, max_items=20),
        SectionSpec("Critical Context", "identifiers", item_chars=120, trim_rank=15, max_items=80),
        SectionSpec("Session Log", "timeline", item_chars=220, trim_rank=10),
    ),
    fallback_source="timeline",
)
"""The host compressor's headings, in the host's order (newer versions' session log last)."""

ENGINES_TEMPLATE = SummaryTemplate(
    name="engines",
    sections=(
        SectionSpec("User requests", "user_requests", item_chars=400, share=0.30, trim_rank=80, newest_first=True),
        SectionSpec("Files and artifacts", "files", item_chars=200, trim_rank=45),
        SectionSpec("Errors", "errors", item_chars=160, trim_rank=40),
        SectionSpec("Decisions", "decisions", item_chars=200, trim_rank=20),
        SectionSpec("Identifier index", "identifiers", item_chars=120, trim_rank=30, max_items=80),
        SectionSpec("Timeline", "timeline", item_chars=220, trim_rank=10),
        SectionSpec("Current state", "current_state", item_chars=600, trim_rank=None, single="last"),
    ),
    fallback_source="timeline",
)
"""``engines.md`` §5.0 section order. Trim order: timeline, then decisions, then identifiers (beyond
their cap), each oldest first; items matching the focus topic are trimmed last."""

FALLBACK_TEMPLATE = SummaryTemplate(
    name="fallback",
    sections=(
        SectionSpec("Historical Task Snapshot", "snapshot", item_chars=1600, trim_rank=None, single="last"),
        SectionSpec("Goal", "goal", item_chars=400, trim_rank=None, single="first"),
        SectionSpec("Completed Actions", "actions", item_chars=200, trim_rank=20, numbered=True, max_items=12),
        SectionSpec("Blocked", "errors", item_chars=160, trim_rank=40, max_items=12),
        SectionSpec("Relevant Files", "files", item_chars=200, trim_rank=45, max_items=30),
        SectionSpec("Session Log", "timeline", item_chars=220, trim_rank=10, max_items=8),
    ),
    fallback_source="timeline",
)
"""The host's deterministic fallback summary: last user ask, up to 12 actions, blocked errors,
files, and the last 8 dropped turns (rendered within 8,000 characters)."""
