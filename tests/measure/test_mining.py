"""Facts mined from a transcript without planted ones."""

from __future__ import annotations

import re
from pathlib import Path

from contextlab import load_transcripts, replay
from contextlab.measure import targets_for
from contextlab.transcripts import Transcript


def call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def recorded() -> Transcript:
    messages = [
        {"role": "user", "content": "Fix the failing deploy. Never force-push to main."},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "bash", '{"command": "git log -1"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "commit 9f8e7d6c5b4a broke src/app/deploy.py"},
        {
            "role": "assistant",
            "content": "We decided to revert 9f8e7d6c5b4a because it broke the deploy.",
            "tool_calls": [call("c2", "edit_file", '{"path": "src/app/deploy.py", "old": "a", "new": "b"}')],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "assistant", "content": "Reverted; src/app/deploy.py is fixed."},
    ]
    return Transcript("recorded", messages)


def test_identifiers_the_agent_quotes_edited_files_and_decisions_are_mined() -> None:
    t = recorded()
    found = targets_for(t)
    assert found.facts_source == "mined"
    facts = {f.key: f for f in found.targets if f.kind == "fact"}
    recall = facts["mined-recall:9f8e7d6c5b4a"]
    assert recall.category == "recall" and recall.uses == (3,) and recall.source_call == "c1"
    artifact = facts["mined-artifact:edit:src/app/deploy.py"]
    assert artifact.category == "artifact" and artifact.uses == (5,)
    assert any(f.category == "decision" and "decided to revert" in f.texts[0] for f in facts.values())
    assert targets_for(t) is found  # cached per transcript object
    result = replay(t, "passthrough")
    assert result.summary["facts_source"] == "mined" and result.summary["fact_retention_final"] == 1.0
    assert result.summary["instruction_retention_final"] == 1.0


def test_a_customer_service_session_mines_the_records_the_agent_quotes(shared_transcripts: Path) -> None:
    # tau-bench: the agent looks records up and quotes booking references and flight numbers from
    # the tool output back to the user and into its next calls; those are its recall facts.
    sessions = load_transcripts(shared_transcripts / "tau-bench-airline" / "gpt-4o-airline.json")
    mined = [targets_for(t) for t in sessions[:20]]
    assert sum(found.facts_source == "mined" for found in mined) >= 15
    recall = [f for found in mined for f in found.targets if f.kind == "fact" and f.category == "recall"]
    assert recall and all(f.origin == "tool" and f.uses and f.source_call for f in recall)
    keys = {f.texts[0] for f in recall}
    assert any(re.fullmatch(r"[A-Z]{3}\d{3}", k) for k in keys)  # a flight number
    assert any(re.fullmatch(r"[A-Z0-9]{6}", k) and not k.isalpha() for k in keys)  # a booking reference


def test_a_go_on_or_an_answer_carries_the_ask_on_instead_of_opening_one() -> None:
    from contextlab.measure.text import is_continuation

    messages = [
        {"role": "user", "content": "Change my flight back from Denver to the quickest one on May 27."},
        {"role": "assistant", "content": "Sure. Could you give me your user ID?"},
        {"role": "user", "content": "Sure, it's mia_li_3668."},
        {"role": "assistant", "content": "Which reservation is it?"},
        {"role": "user", "content": "I don't remember the reservation ID, sorry."},
        {"role": "assistant", "content": "I found it and changed the flight."},
        {"role": "user", "content": "continue"},
        {"role": "assistant", "content": "Done. Anything else?"},
        {"role": "user", "content": "Yes, can you also add a checked bag?"},
        {"role": "assistant", "content": "Added."},
        {"role": "user", "content": "Thanks, now cancel my other reservation HXDUBJ."},
        {"role": "assistant", "content": "Cancelled. Is there anything else I can help with?"},
        {"role": "user", "content": "Book the same flight for my son"},
        {"role": "assistant", "content": "Booked."},
        {"role": "user", "content": "continue until all are done"},
    ]
    tasks = [t for t in targets_for(Transcript("asks", messages)).targets if t.kind == "task"]
    assert [t.message_index for t in tasks] == [0, 8, 10, 12]
    # A long reply, or one with a request, is an ask of its own even right after a question.
    assert not is_continuation("No. " + "The return leg has to be on the same day as the outbound. " * 4, True)
    assert not is_continuation("I need the fastest one with a stopover", True)
    assert is_continuation("Yes, please proceed.", False) and not is_continuation("Fix the build", False)
