"""Information-retention probes: which gold facts are still in the request the provider sees.

A transcript's gold facts are literal strings planted in (or mined from) its messages. A fact is
*eligible* at a request once the message that carries it has been seen by the host, and *in
context* when its text occurs in the final request payload (message contents and tool-call
arguments, the JSON both raw and with escapes undone; engines.md §6, Q1). Engines that lose a fact
show it here, request by request.

Each distinct wire message is scanned once for all facts together (an Aho-Corasick automaton), and a
request that extends the previous one only scans its new messages, so probing stays linear.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import ahocorasick

from contextlab.engine import Message
from contextlab.host.observers import RequestObserver, RequestView
from contextlab.messages import content_text, tool_call_arguments, tool_calls
from contextlab.transcripts.model import GoldFact, Transcript

PROBE_COLUMNS = ["facts_eligible", "facts_in_context", "fact_retention"]


def message_payload(message: Message) -> str:
    """The text a provider sees in a message: content plus tool-call names and arguments."""
    parts = [content_text(message)]
    for call in tool_calls(message):
        arguments = tool_call_arguments(call)
        parts.append(arguments)
        try:
            # Arguments are JSON: a fact with quotes or newlines appears escaped in the raw string.
            parts.append(json.dumps(json.loads(arguments), ensure_ascii=False))
            decoded = json.loads(arguments)
            if isinstance(decoded, dict):
                parts.extend(str(v) for v in decoded.values())
        except (ValueError, TypeError):
            pass
    return "\n".join(parts)


class RetentionProbe:
    """A :class:`RequestObserver` adding ``facts_eligible``, ``facts_in_context`` and ``fact_retention``.

    The summary gains ``fact_retention_mean`` (over requests with eligible facts),
    ``fact_retention_final``, ``needed_facts_retained_final`` and one ``fact_retention_final.<category>``
    per probe category.
    """

    def __init__(self) -> None:
        self._facts: list[GoldFact] = []
        self._by_text: dict[str, list[int]] = {}
        self._automaton: Any = None
        self._memo: dict[int, tuple[Message, frozenset[int]]] = {}
        self._previous_found: list[frozenset[int]] = []
        self._counts: Counter[int] = Counter()
        self._retentions: list[float] = []
        self._final: dict[str, Any] = {}

    def bind(self, transcript: Transcript) -> None:
        """Read the transcript's gold facts (called by the host before the first request)."""
        self._facts = list(transcript.facts)
        self._by_text = {}
        for i, fact in enumerate(self._facts):
            self._by_text.setdefault(fact.text, []).append(i)
        self._automaton = None
        if self._by_text:
            automaton = ahocorasick.Automaton()
            for text, indices in self._by_text.items():
                automaton.add_word(text, tuple(indices))
            automaton.make_automaton()
            self._automaton = automaton

    def clone(self) -> RetentionProbe:
        return RetentionProbe()

    def columns(self) -> list[str]:
        return list(PROBE_COLUMNS)

    def _facts_in(self, message: Message) -> frozenset[int]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        found: set[int] = set()
        if self._automaton is not None:
            # Aho-Corasick: one pass over the payload finds every fact, overlapping ones included.
            for _end, indices in self._automaton.iter(message_payload(message)):
                found.update(indices)
        result = frozenset(found)
        self._memo[id(message)] = (message, result)
        return result

    def observe(self, view: RequestView) -> dict[str, Any]:
        if not self._facts:
            return {"facts_eligible": 0, "facts_in_context": 0, "fact_retention": float("nan")}
        keep = min(view.prefix_messages, len(self._previous_found))
        for gone in self._previous_found[keep:]:
            self._counts.subtract(gone)
        found = self._previous_found[:keep]
        for message in view.messages[keep:]:
            facts = self._facts_in(message)
            self._counts.update(facts)
            found.append(facts)
        self._previous_found = found
        eligible = [i for i, f in enumerate(self._facts) if f.message_index < view.transcript_index]
        present = [i for i in eligible if self._counts[i] > 0]
        retention = len(present) / len(eligible) if eligible else float("nan")
        if eligible:
            self._retentions.append(retention)
        self._final = self._final_summary(set(eligible), set(present))
        return {"facts_eligible": len(eligible), "facts_in_context": len(present), "fact_retention": retention}

    def _final_summary(self, eligible: set[int], present: set[int]) -> dict[str, Any]:
        out: dict[str, Any] = {"fact_retention_final": len(present) / len(eligible) if eligible else float("nan")}
        needed = [i for i in eligible if self._facts[i].needed_later]
        out["needed_facts_retained_final"] = (
            sum(1 for i in needed if i in present) / len(needed) if needed else float("nan")
        )
        for category in sorted({self._facts[i].category for i in eligible}):
            members = [i for i in eligible if self._facts[i].category == category]
            out[f"fact_retention_final.{category}"] = sum(1 for i in members if i in present) / len(members)
        return out

    def summary(self) -> dict[str, Any]:
        if not self._facts:
            return {}
        mean = sum(self._retentions) / len(self._retentions) if self._retentions else float("nan")
        return {"facts": len(self._facts), "fact_retention_mean": mean, **self._final}


def default_observers(transcript: Transcript) -> list[RequestObserver]:
    """Observers every replay gets: retention probes when the transcript carries gold facts."""
    return [RetentionProbe()] if transcript.facts else []
