"""Lone surrogates in a recorded session (half an emoji a tool cut: valid JSON, not UTF-8).

The host sends U+FFFD in their place (docs/host-loop.md); the probe reads every text in that form,
so a probed replay measures such a session like any other and never fails on one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from contextlab import load_dataset, replay
from contextlab.cli import main
from contextlab.frame_io import write_frame
from contextlab.measure import targets_for
from contextlab.transcripts import Transcript
from tests.measure.test_evidence import shipped

HALF = "\ud83d"  # the first half of an emoji, alone


def tainted() -> Transcript:
    """``coding-agent-short`` with a lone surrogate in every kind of text a session records."""
    transcript = copy.deepcopy(load_dataset("coding-agent-short"))
    for index, message in enumerate(transcript.messages):
        role, content = message.get("role"), message.get("content")
        if role == "tool" and isinstance(content, str):
            text = f"ValueError: bad token {HALF} in src/parser_v{index}.py\n{content}"
            # Every other tool output as content parts (the shape some recorders use).
            message["content"] = [{"type": "text", "text": text}] if index % 2 else text
        elif role == "user" and isinstance(content, str):
            message["content"] = f"{content} (keep {HALF} ticket ABC-{index} in mind)"
        elif role == "assistant" and isinstance(content, str) and content:
            message["content"] = f"I decided to rewrite {HALF} the tokenizer. {content}"
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"])
            arguments["note"] = f"cut {HALF} here"
            if isinstance(arguments.get("path"), str):
                arguments["path"] = arguments["path"].replace(".", f"{HALF}.", 1)  # an artifact's name
            call["function"]["arguments"] = json.dumps(arguments)  # the JSON escape of the half
    return transcript


@pytest.mark.parametrize("engine", shipped())
def test_every_shipped_engine_measures_a_session_with_lone_surrogates(engine: str, tmp_path: Path) -> None:
    result = replay(tainted(), engine, context_length=16_000)
    assert result.summary["violations"] == 0
    assert result.summary["requests"] > 0
    for name, frame in result.frames.items():  # every frame is text a file can hold (UTF-8)
        write_frame(frame, tmp_path / f"{name}.parquet")
    write_frame(result.trace, tmp_path / "trace.parquet", "trace")


def test_targets_are_read_as_sent() -> None:
    found = targets_for(tainted())
    texts = [text for target in found.targets for text in (target.key, *target.texts)]
    for text in texts:
        text.encode("utf-8")  # raises on anything unencodable left (an empty text encodes too)
    errors = [t for t in found.targets if t.kind == "error" and "\ufffd" in t.texts[0]]
    assert errors  # the tainted error lines are targets, in the form the request carries them
    assert [t for t in found.targets if t.kind == "artifact" and "\ufffd" in t.texts[0]]  # and the paths
    # passthrough sends every row: each of them is found in context until the window overflows.
    trace = replay(tainted(), "passthrough", context_length=1_000_000).trace
    assert (trace["error_retention"].dropna() == 1.0).all()
    assert (trace["identifier_retention"].dropna() == 1.0).all()
    assert (trace["artifact_retention"].dropna() == 1.0).all()


def test_the_cli_replays_a_file_with_lone_surrogates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "odd.json"
    rows = [
        {"role": "user", "content": f"fix the parser {HALF} please"},
        {
            "role": "assistant",
            "content": "Reading it.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/p{HALF}.py"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": f"ValueError: bad token {HALF} at line 12"},
        {"role": "assistant", "content": f"Done {HALF}."},
    ]
    source.write_text(json.dumps(rows))  # JSON escapes: valid UTF-8 on disk
    assert main(["replay", str(source), "--out", str(tmp_path / "trace.parquet")]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_row_not_in_the_wire_form_is_searched_as_sent() -> None:
    # A row given as its own api_content is not swept by the wire form: the automata read it as sent.
    from contextlab.measure.faithfulness import _searcher
    from contextlab.measure.scan import TextIndex

    index = TextIndex(["bad \ufffd token", "ABC-12"])
    assert index.matched(f"a bad {HALF} token, ABC-12") == {"bad \ufffd token", "ABC-12"}
    assert _searcher(["src/a.py", "ABC-12", "v1.2.3"])(f"{HALF} src/a.py v1.2.3") == {"src/a.py", "v1.2.3"}
