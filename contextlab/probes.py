"""Information-retention probes: which facts are still in the request the provider sees.

A transcript's gold facts are literal strings planted in (or, for recorded sessions, mined from) its
messages. A fact is *eligible* at a request once the message that carries it has been seen by the
host, and *in context* when its text occurs in the final request payload (message contents and
tool-call arguments, the JSON both raw and with escapes undone; engines.md §6, Q1).

The work lives in :mod:`contextlab.measure` (``docs/metrics.md``); this module keeps the original
names: :class:`RetentionProbe` gives only the three ``facts_*`` columns, and
:func:`default_observers` gives every replay the full :class:`~contextlab.measure.MeasureProbe`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contextlab.host.observers import RequestObserver
from contextlab.measure.breaks import price_of
from contextlab.measure.probe import FACT_COLUMNS, MeasureProbe
from contextlab.measure.text import message_payload
from contextlab.transcripts.model import Transcript

PROBE_COLUMNS = list(FACT_COLUMNS)

__all__ = ["PROBE_COLUMNS", "RetentionProbe", "default_observers", "message_payload"]


class RetentionProbe(MeasureProbe):
    """Adds ``facts_eligible``, ``facts_in_context`` and ``fact_retention`` only.

    The summary gains ``fact_retention_mean`` (over requests with eligible facts),
    ``fact_retention_final``, ``needed_facts_retained_final`` and one ``fact_retention_final.<category>``
    per probe category.
    """

    def __init__(self) -> None:
        super().__init__(facts_only=True, recover=False)

    def clone(self) -> RetentionProbe:
        return RetentionProbe()


def default_observers(
    transcript: Transcript, observers: Iterable[Any] = (), *, max_attempts: int = 3
) -> list[RequestObserver]:
    """The observer every replay gets: the measurement probe, pricing breaks under the first
    cache observer in ``observers`` (if any)."""
    price = next((p for p in (price_of(o) for o in observers) if p is not None), None)
    del transcript  # every transcript is measured (facts are mined when none are planted)
    return [MeasureProbe(cache_price=price, max_attempts=max_attempts)]
