"""Facts mined from a recorded transcript that carries no planted ones (engines.md §6.2).

Three deterministic sources, each tagged with a probe category:

* ``recall``: identifiers first seen in a tool output that a later assistant message quotes (the
  recorded agent demonstrably needed them); needed at each quoting message.
* ``artifact``: files the agent edits or creates (from tool-call arguments); needed wherever a later
  message names the file again.
* ``decision``: assistant sentences with decision cue words; not needed later by construction.

The caller (:func:`contextlab.measure.targets.targets_for`) caches the result per transcript.
"""

from __future__ import annotations

from contextlab.engine import Message
from contextlab.measure.targets import Target
from contextlab.measure.text import decision_sentences
from contextlab.messages import content_text

MAX_DECISIONS = 200
"""Decisions kept (the first ones): a long session states hundreds; the probe needs a sample."""


def decision_candidates(messages: list[Message]) -> list[tuple[int, str]]:
    """``(transcript index, sentence)`` of the first :data:`MAX_DECISIONS` distinct decision sentences."""
    seen: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or len(seen) >= MAX_DECISIONS:
            continue
        for sentence in decision_sentences(content_text(message)):
            if len(seen) >= MAX_DECISIONS:
                break
            seen.setdefault(sentence, index)
    return [(index, sentence) for sentence, index in seen.items()]


def mine_facts(messages: list[Message], targets: list[Target], decisions: list[tuple[int, str]]) -> list[Target]:
    """Facts for ``messages``, built from the already extracted ``targets`` (identifiers, artifacts)
    and the :func:`decision_candidates`."""
    facts: list[Target] = []
    for target in targets:
        if target.kind == "identifier" and target.origin == "tool":
            quotes = tuple(u for u in target.uses if messages[u].get("role") == "assistant")
            if quotes:
                facts.append(
                    Target(
                        "fact",
                        f"mined-recall:{target.key}",
                        target.texts,
                        target.message_index,
                        "tool",
                        "recall",
                        quotes,
                        target.source_call,
                        needed_later=True,
                    )
                )
        elif target.kind == "artifact" and target.category in ("edit", "create"):
            facts.append(
                Target(
                    "fact",
                    f"mined-artifact:{target.key}",
                    target.texts,
                    target.message_index,
                    "assistant",
                    "artifact",
                    target.uses,
                    needed_later=bool(target.uses),
                )
            )
    for number, (index, sentence) in enumerate(decisions, start=1):
        facts.append(Target("fact", f"mined-decision:{index}:{number}", (sentence,), index, "assistant", "decision"))
    # Artifacts are keyed op:path; one file edited then created would otherwise count twice.
    unique: dict[str, Target] = {}
    for fact in facts:
        unique.setdefault(fact.texts[0] if fact.category == "artifact" else fact.key, fact)
    return list(unique.values())
