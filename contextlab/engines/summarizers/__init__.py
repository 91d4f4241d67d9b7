"""Summarizers behind one small interface: ``extractive`` (offline, the default) and ``llm``."""

from __future__ import annotations

from contextlab.engines.summarizers.base import (
    FailureKind,
    FunctionSummarizer,
    Summarizer,
    SummaryFailure,
    SummaryRequest,
)
from contextlab.engines.summarizers.extractive import ExtractiveSummarizer
from contextlab.engines.summarizers.template import (
    ENGINES_TEMPLATE,
    FALLBACK_TEMPLATE,
    HOST_TEMPLATE,
    SectionSpec,
    SummaryTemplate,
)

__all__ = [
    "ENGINES_TEMPLATE",
    "FALLBACK_TEMPLATE",
    "HOST_TEMPLATE",
    "ExtractiveSummarizer",
    "FailureKind",
    "FunctionSummarizer",
    "SectionSpec",
    "Summarizer",
    "SummaryFailure",
    "SummaryRequest",
    "SummaryTemplate",
]
