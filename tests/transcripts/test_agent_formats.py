"""Issue 11 importers, each on files written from the format's public definition."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

from contextlab.cli import main as cli_main
from contextlab.errors import TranscriptError
from contextlab.messages import validate_messages
from contextlab.transcripts import load_transcript, load_transcripts
from contextlab.transcripts.issues import TranscriptWarning
from tests.transcripts.transcript_samples import SAMPLES, render, write_hermes_state_db


def _load(tmp_path: Path, name: str) -> list[Any]:
    kind, value = SAMPLES[name]
    path = tmp_path / f"{name}.{kind}"
    path.write_text(render(kind, value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_transcripts(path)


def _shape(t: Any) -> list[str]:
    return [m["role"] + ("*" if m.get("tool_calls") else "") for m in t.messages]


def test_hermes_trajectory_pairs_repeated_provider_ids_by_position(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "hermes-trajectory-repeated-ids")
    assert _shape(t) == ["user", "assistant*", "tool", "tool", "assistant*", "tool", "assistant"]
    first, second = t.messages[1]["tool_calls"]
    assert first["id"] != second["id"]  # ids unique although the provider reused one
    assert [t.messages[2]["tool_call_id"], t.messages[3]["tool_call_id"]] == [first["id"], second["id"]]
    assert [t.messages[2]["content"], t.messages[3]["content"]] == ["A", "B"]  # order kept
    assert t.messages[5]["tool_call_id"] == t.messages[4]["tool_calls"][0]["id"]
    assert validate_messages(t.messages) == [] and "structural_violations" not in t.metadata


def test_sharegpt_response_id_wins_when_it_is_unique(tmp_path: Path) -> None:
    calls = (
        '<tool_call>{"name": "f", "arguments": {}, "id": "a"}</tool_call>'
        '<tool_call>{"name": "f", "arguments": {"x": 1}, "id": "b"}</tool_call>'
    )
    replies = (
        '<tool_response>{"tool_call_id": "b", "content": "B"}</tool_response>'
        '<tool_response>{"tool_call_id": "a", "content": "A"}</tool_response>'
    )
    doc = {
        "conversations": [
            {"from": "human", "value": "q"},
            {"from": "gpt", "value": calls},
            {"from": "tool", "value": replies},
        ]
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    t = load_transcript(path)
    assert [(m["tool_call_id"], m["content"]) for m in t.messages[2:]] == [("b", "B"), ("a", "A")]


def test_streamed_text_may_hold_characters_splitlines_breaks_at(tmp_path: Path) -> None:
    # An SSE line ends at CR or LF only; a data: payload written without ASCII escaping may hold
    # U+2028 or U+0085 raw inside a JSON string.
    kind, entries = SAMPLES["claude-trace"]
    stream = entries[0]["response"]["body_raw"].replace('"text": "Listing."', '"text": "List\u2028ing\x85."')
    assert "\u2028" in stream
    entry = {**entries[0], "response": {**entries[0]["response"], "body_raw": stream}}
    path = tmp_path / "trace.jsonl"
    path.write_text(render(kind, [entry]))
    (t,) = load_transcripts(path)
    assert t.messages[1]["content"] == "List\u2028ing\x85."


def test_claude_trace_rebuilds_one_conversation_with_usage(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "claude-trace")
    assert t.source_format == "claude-trace" and t.system_prompt == "You are a coding agent."
    assert _shape(t) == ["user", "assistant*", "tool", "assistant"]
    call = t.messages[1]["tool_calls"][0]
    assert call["id"] == "toolu_1" and json.loads(call["function"]["arguments"]) == {"command": "ls"}  # SSE joined
    assert t.messages[1]["content"] == "Listing."
    assert {
        i: (u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.completion_tokens) for i, u in t.usage.items()
    } == {
        1: (912, 0, 900, 20),
        3: (970, 900, 40, 8),
    }
    assert t.metadata["rebuilt_from_requests"] == 2 and t.timestamps[1] == 1760000000.0


def test_anthropic_pairs_jsonl_is_one_conversation(tmp_path: Path) -> None:
    found = _load(tmp_path, "anthropic-pairs")
    assert len(found) == 1 and found[0].n_requests == 2 and sorted(found[0].usage) == [1, 3]


def test_a_single_pair_answered_by_a_tool_call_is_not_a_violation(tmp_path: Path) -> None:
    _, value = SAMPLES["anthropic-pairs"]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(value[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unanswered_tool_call warning
        t = load_transcript(path)
    assert t.messages[-1]["tool_calls"][0]["id"] == "toolu_1" and "structural_violations" not in t.metadata


def test_side_requests_become_their_own_conversations(tmp_path: Path) -> None:
    _, rows = SAMPLES["claude-trace"]
    side = json.loads(json.dumps(rows[0]))
    side["request"]["body"] = {"model": "haiku", "system": "Title this", "messages": [{"role": "user", "content": "x"}]}
    side["response"] = {"body": {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "T"}]}}
    path = tmp_path / "log.jsonl"
    path.write_text(render("jsonl", [rows[0], side, rows[1]]))
    main, other = load_transcripts(path)
    assert main.n_requests == 2 and other.n_requests == 1 and other.transcript_id.endswith("#1")


def test_codex_rollout_current_layout(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "codex")
    assert t.source_format == "codex" and t.model == "gpt-5-codex" and t.transcript_id == "0199-abc"
    assert _shape(t) == ["user", "user", "assistant*", "tool", "assistant"]
    assert t.messages[2]["reasoning_content"] == "Run pytest"
    usage = t.usage[2]
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (2900, 2048, 16)
    assert usage.raw["input_tokens_details"] == {"cached_tokens": 2048}  # Responses shape, for calibration
    assert [(e.message_index, e.summary) for e in t.events] == [(4, "Summary: tests pass.")]
    assert t.metadata["skipped_lines"] == {"event_msg:user_message": 1}


def test_codex_rollout_older_layout(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "codex-legacy")
    assert t.system_prompt == "Be terse." and _shape(t) == ["user", "assistant*", "tool", "assistant"]
    assert t.messages[2]["content"] == "a.py"


def test_openhands_trajectory_and_output_jsonl(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "openhands")
    (instance,) = _load(tmp_path, "openhands-output")
    assert _shape(t) == ["user", "assistant*", "tool", "tool", "assistant"]
    assert [c["id"] for c in t.messages[1]["tool_calls"]] == ["toolu_01", "toolu_02"]  # one response, two actions
    assert t.system_prompt == "You are OpenHands." and len(t.tools) == 1
    assert t.usage[1].cache_read_tokens == 4096 and t.metadata["skipped_events"] == {"agent_state_changed": 1}
    assert instance.transcript_id == "django__django-11099" and instance.messages == t.messages


def test_openhands_old_pairs_without_function_calling(tmp_path: Path) -> None:
    history = [
        [
            {"source": "user", "action": "message", "args": {"content": "fix"}},
            {"source": "user", "observation": "null", "content": ""},
        ],
        [
            {"source": "agent", "action": "run", "args": {"command": "ls", "thought": "look"}},
            {"source": "agent", "observation": "run", "content": "a.py"},
        ],
        [
            {"source": "agent", "action": "finish", "args": {"outputs": {}, "thought": "done"}},
            {"source": "agent", "observation": "null", "content": ""},
        ],
    ]
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "x-1", "history": history}) + "\n")
    t = load_transcript(path)
    assert [(m["role"], m["content"]) for m in t.messages] == [
        ("user", "fix"),
        ("assistant", "look\nls"),
        ("user", "a.py"),
        ("assistant", "done"),
    ]


def test_gemini_cli_session_and_contents(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "gemini-cli")
    assert t.source_format == "gemini-cli" and t.model == "gemini-2.5-pro"
    assert _shape(t) == ["user", "assistant*", "tool", "assistant"]
    assert t.messages[2] == {"role": "tool", "tool_call_id": "read_file-1", "content": "print(1)"}
    assert t.usage[1].raw["cachedContentTokenCount"] == 6000 and t.usage[1].prompt_tokens == 8000
    assert t.metadata["skipped_messages"] == {"info": 1}
    (c,) = _load(tmp_path, "gemini-contents")
    assert _shape(c) == ["user", "assistant*", "tool", "assistant"]
    assert c.messages[2]["tool_call_id"] == c.messages[1]["tool_calls"][0]["id"]


def test_aider_chat_history_and_llm_history(tmp_path: Path) -> None:
    (chat,) = _load(tmp_path, "aider-chat-history")
    assert [(m["role"], m["content"][:15]) for m in chat.messages] == [
        ("user", "make it print 2"),
        ("assistant", "I'll change the"),
        ("user", "thanks"),
        ("assistant", "You're welcome."),
    ]
    assert chat.metadata["skipped_commands"] == 1  # /add is not a model turn
    assert (chat.usage[1].prompt_tokens, chat.usage[1].cache_write_tokens, chat.usage[3].cache_read_tokens) == (
        2300,
        1100,
        2200,
    )
    (llm,) = _load(tmp_path, "aider-llm-history")
    assert llm.system_prompt == "Act as an expert developer.\nAlways use best practices."
    assert [m["role"] for m in llm.messages] == ["user", "assistant", "user", "assistant"]
    assert llm.messages[1]["content"] == "I'll change the print.\n\ndone"


def test_otel_genai_spans_and_langfuse_generations(tmp_path: Path) -> None:
    (span,) = _load(tmp_path, "otel-genai")
    assert span.system_prompt == "Be brief." and _shape(span) == ["user", "assistant*", "tool", "assistant"]
    assert [u.prompt_tokens for u in span.usage.values()] == [100, 150]
    (gen,) = _load(tmp_path, "langfuse")
    assert [m["content"] for m in gen.messages] == ["hi", "hello", "bye", "bye!"] and gen.usage[3].prompt_tokens == 20


def test_openai_legacy_function_role_and_swe_agent_history_only(tmp_path: Path) -> None:
    (legacy,) = _load(tmp_path, "openai-legacy-function")
    call_id = legacy.messages[1]["tool_calls"][0]["id"]
    assert legacy.messages[2] == {"role": "tool", "name": "calc", "content": "4", "tool_call_id": call_id}
    (swe,) = _load(tmp_path, "swe-agent-history-only")
    assert swe.source_format == "swe-agent" and "thought" not in swe.messages[1]


def test_hermes_session_json(tmp_path: Path) -> None:
    (t,) = _load(tmp_path, "hermes-session")
    assert t.source_format == "hermes-session" and t.system_prompt == "You are Hermes."
    assert t.model == "anthropic/claude-sonnet-4" and t.messages[1]["reasoning"] == "check"
    assert "reasoning_content" not in t.messages[1]  # kept as the host kept it: a trajectory field


def test_hermes_state_db_restores_the_assistant_fields_as_the_host_does(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    write_hermes_state_db(path)
    db = sqlite3.connect(path)
    for column in ("finish_reason", "reasoning_content", "reasoning_details", "codex_reasoning_items"):
        db.execute(f"ALTER TABLE messages ADD COLUMN {column} TEXT")
    details = [{"type": "reasoning.text", "text": "t", "signature": "s"}]
    db.execute(
        "UPDATE messages SET reasoning = 'why', reasoning_content = '', reasoning_details = ?, finish_reason ="
        " 'tool_calls', codex_reasoning_items = 'not json' WHERE session_id = 's1' AND role = 'assistant'"
        " AND content IS NULL",
        (json.dumps(details),),
    )
    db.execute("UPDATE messages SET reasoning = 'not mine', reasoning_content = 'x' WHERE role = 'user'")
    db.commit()
    db.close()
    with pytest.warns(TranscriptWarning, match=r"column 'codex_reasoning_items' is not JSON; left out"):
        main, _ = load_transcripts(path)
    assistant = main.messages[1]
    assert assistant["reasoning"] == "why" and assistant["reasoning_content"] == ""  # an echo placeholder kept
    assert assistant["reasoning_details"] == details and assistant["finish_reason"] == "tool_calls"
    assert "codex_reasoning_items" not in assistant
    assert not any(key.startswith("reasoning") for key in main.messages[0])  # assistant rows only


def test_hermes_state_db_sessions_messages_and_compaction_lineage(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    write_hermes_state_db(path)
    before = path.read_bytes()
    main, other = load_transcripts(path)
    assert path.read_bytes() == before  # opened read-only
    assert main.transcript_id == "s1" and main.source_format == "hermes-state-db" and main.system_prompt == "SYS"
    assert [m.get("content") for m in main.messages] == [
        "task one",
        None,
        "out",
        "done one",
        "task two",
        "old",
        "done two",
    ]
    assert [(e.message_index, e.summary) for e in main.events] == [(4, "[CONTEXT COMPACTION] summary of task one")]
    assert main.metadata["sessions"] == ["s1", "s2"] and main.metadata["copies_dropped"] == 1
    assert main.metadata["recorded_totals"]["input_tokens"] == 150
    assert validate_messages(main.messages) == []
    assert other.transcript_id == "b1" and other.system_prompt == "OTHER"


def test_sqlite_file_that_is_not_hermes(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE x (a)")
    db.commit()
    db.close()
    with pytest.raises(TranscriptError, match=r"not a Hermes state\.db"):
        load_transcripts(path)


def test_claude_trace_skips_token_counting_calls(tmp_path: Path) -> None:
    _, rows = SAMPLES["claude-trace"]
    counting = json.loads(json.dumps(rows[1]))
    counting["request"]["url"] = "https://api.anthropic.com/v1/messages/count_tokens"
    counting["response"] = {"status_code": 200, "headers": {}, "body": {"input_tokens": 42}}
    path = tmp_path / "log.jsonl"
    path.write_text(render("jsonl", [rows[0], counting, rows[1]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (t,) = load_transcripts(path)
    assert t.n_requests == 2 and t.metadata["skipped_entries"] == 1


def _hermes_db_with(path: Path, sql: str) -> Path:
    write_hermes_state_db(path)
    db = sqlite3.connect(path)
    db.execute(sql)
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("UPDATE sessions SET input_tokens = 'abc'", "field 'sessions.input_tokens': expected a token count"),
        ("UPDATE messages SET tool_calls = '[1, \"a\"]' WHERE tool_calls IS NOT NULL", "tool_calls"),
    ],
    ids=["text-token-count", "malformed-tool-calls"],
)
def test_hermes_state_db_bad_rows_are_one_line_exit_2(
    tmp_path: Path, sql: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _hermes_db_with(tmp_path / "state.db", sql)
    assert cli_main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("contextlab: error:") and message in err, err
