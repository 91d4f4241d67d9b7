"""Claude Code session logs: merging, tool results, compaction events, side chains, real sessions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from contextlab.errors import TranscriptError
from contextlab.messages import validate_messages
from contextlab.transcripts import load_transcript, load_transcripts
from contextlab.transcripts.issues import TranscriptWarning

SESSION = "s-1"


def _line(kind: str, uuid: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": SESSION,
        "isSidechain": False,
        "timestamp": "2026-02-10T21:11:56.000Z",
        **extra,
    }


def _assistant(uuid: str, mid: str, block: dict[str, Any], out: int = 5, **extra: Any) -> dict[str, Any]:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100},
        "output_tokens": out,
    }
    return _line(
        "assistant",
        uuid,
        requestId=f"req-{mid}",
        message={
            "id": mid,
            "model": "claude-opus-4-6",
            "role": "assistant",
            "content": [block],
            "usage": usage,
        },
        **extra,
    )


def _user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return _line("user", uuid, message={"role": "user", "content": content}, **extra)


def _result(call_id: str, text: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text, **extra}


def _use(call_id: str, name: str = "Bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_response_lines_merge_and_interleaved_results_follow_the_assistant(tmp_path: Path) -> None:
    rows = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        _user("u1", "fix the bug"),
        _assistant("a1", "msg_1", {"type": "text", "text": "Looking."}),
        _assistant("a2", "msg_1", {"type": "thinking", "thinking": "hmm", "signature": "x"}),
        _assistant("a3", "msg_1", _use("t1")),
        _user("u2", [_result("t1", "first")]),
        _user("u3", "<system-reminder>hook</system-reminder>", isMeta=True),
        _assistant("a4", "msg_1", _use("t2", "Read"), out=40),
        _user("u4", [_result("t2", "second", is_error=True)]),
        _line("progress", "p1", data={}),
        _assistant("a5", "msg_2", {"type": "text", "text": "Done."}),
    ]
    t = load_transcript(_write(tmp_path / "s.jsonl", rows))
    roles = [m["role"] for m in t.messages]
    assert roles == ["user", "assistant", "tool", "tool", "user", "assistant"]
    merged = t.messages[1]
    assert merged["content"] == "Looking."
    assert merged["reasoning_content"] == "hmm"
    assert [c["id"] for c in merged["tool_calls"]] == ["t1", "t2"]
    assert json.loads(merged["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
    assert t.messages[3]["display_metadata"] == {"is_error": True}
    assert t.messages[4]["display_kind"] == "meta"
    assert validate_messages(t.messages) == []
    assert t.n_requests == 2
    usage = t.usage[1]
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (1103, 1000, 100)
    assert usage.completion_tokens == 40  # the final streamed count
    assert usage.raw["cache_creation"]["ephemeral_1h_input_tokens"] == 100
    assert set(t.usage) == {1, 5}
    assert t.timestamps[0] == pytest.approx(1770757916.0)
    assert t.metadata["skipped_lines"] == {"file-history-snapshot": 1, "progress": 1}


def test_compact_boundary_becomes_an_event_with_its_summary(tmp_path: Path) -> None:
    rows = [
        _user("u1", "start"),
        _assistant("a1", "msg_1", {"type": "text", "text": "ok"}),
        _line(
            "system",
            "b1",
            subtype="compact_boundary",
            content="Conversation compacted",
            compactMetadata={"trigger": "manual", "preTokens": 142431},
        ),
        _user(
            "u2",
            "This session is being continued... SUMMARY",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        _user("u3", "continue"),
        _assistant("a2", "msg_2", {"type": "text", "text": "continuing"}),
    ]
    t = load_transcript(_write(tmp_path / "s.jsonl", rows))
    assert len(t.events) == 1
    event = t.events[0]
    assert (event.trigger, event.pre_tokens, event.message_index) == ("manual", 142431, 2)
    assert event.summary == "This session is being continued... SUMMARY"
    assert t.messages[2]["display_kind"] == "compact_summary"


def test_sidechain_lines_skipped_in_a_main_session_but_a_subagent_log_loads(tmp_path: Path) -> None:
    side = {"isSidechain": True}
    main = [
        _user("u1", "hi"),
        {**_user("s1", "side"), **side},
        _assistant("a1", "msg_1", {"type": "text", "text": "yo"}),
    ]
    t = load_transcript(_write(tmp_path / "main.jsonl", main))
    assert [m["content"] for m in t.messages] == ["hi", "yo"]
    assert t.metadata["skipped_lines"] == {"sidechain": 1}
    sub = [
        {**_user("s1", "task prompt"), **side, "agentId": "a9"},
        {**_assistant("s2", "msg_9", {"type": "text", "text": "report"}), **side},
    ]
    t = load_transcript(_write(tmp_path / "agent-a9.jsonl", sub))
    assert t.metadata["subagent"] is True and t.transcript_id == f"{SESSION}/agent-a9"
    assert len(t.messages) == 2


def test_unknown_block_type_warns_and_is_kept(tmp_path: Path) -> None:
    rows = [
        _user("u1", "hi"),
        _assistant("a1", "msg_1", {"type": "server_tool_use", "id": "x", "name": "web"}),
    ]
    with pytest.warns(TranscriptWarning) as caught:
        t = load_transcript(_write(tmp_path / "s.jsonl", rows))
    found = [str(w.message) for w in caught]
    assert any("unknown assistant block type 'server_tool_use'" in m for m in found)
    assert any("empty_message" in m for m in found)  # the assistant has nothing a provider would accept
    assert t.messages[1]["display_metadata"]["unmapped_blocks"][0]["type"] == "server_tool_use"
    assert t.metadata["import_warnings"]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (_user("u1", 5), "line 2: field 'content': expected a string or a list of blocks, got int"),
        ({"type": "user", "uuid": "u", "sessionId": "s"}, "line 2: field 'message': expected an object"),
        (_user("u1", [{"type": "tool_result", "content": "x"}]), "tool_use_id"),
        (_assistant("a1", "m", {"type": "tool_use", "name": "x"}), "field 'id' must be a non-empty string"),
    ],
)
def test_bad_lines_raise_transcript_error_with_line(tmp_path: Path, row: dict[str, Any], expected: str) -> None:
    path = _write(tmp_path / "bad.jsonl", [_user("u0", "hi"), row])
    with pytest.raises(TranscriptError, match=expected.replace("(", r"\(")) as info:
        load_transcripts(path)
    assert info.value.source == str(path)


# --------------------------------------------------------------------------- real sessions


def _source_counts(path: Path) -> dict[str, Any]:
    """Counts taken straight from the raw log, independently of the importer."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    first = next(r for r in rows if r.get("type") in ("user", "assistant"))
    keep_side = bool(first.get("isSidechain"))
    ids: list[str] = []
    calls = results = user_texts = 0
    usage: dict[str, dict[str, int]] = {}
    boundaries = []
    for r in rows:
        if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
            boundaries.append((r["compactMetadata"]["trigger"], r["compactMetadata"]["preTokens"]))
        if r.get("type") not in ("user", "assistant") or (r.get("isSidechain") and not keep_side):
            continue
        content = r["message"]["content"]
        if r["type"] == "assistant":
            mid = r["message"]["id"]
            if not ids or ids[-1] != mid:
                ids.append(mid)
            calls += sum(1 for b in content if b["type"] == "tool_use")
            prev = usage.get(mid)
            if prev is None or r["message"]["usage"]["output_tokens"] >= prev["output_tokens"]:
                usage[mid] = r["message"]["usage"]
        elif isinstance(content, str):
            user_texts += 1
        else:
            results += sum(1 for b in content if b["type"] == "tool_result")
            user_texts += any(b["type"] != "tool_result" for b in content)
    prompt = sum(
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in usage.values()
    )
    read = sum(u["cache_read_input_tokens"] for u in usage.values())
    return {
        "requests": len(ids),
        "messages": len(ids) + results + user_texts,
        "calls": calls,
        "results": results,
        "prompt": prompt,
        "read": read,
        "boundaries": boundaries,
    }


def _claude_files(root: Path) -> list[Path]:
    return sorted((root / "claude-code").rglob("*.jsonl"))


def test_every_real_claude_code_log_matches_its_source(shared_transcripts: Path) -> None:
    files = _claude_files(shared_transcripts)
    assert len(files) >= 18
    for path in files:
        t = load_transcript(path)
        expected = _source_counts(path)
        roles = Counter(m["role"] for m in t.messages)
        assert len(t.messages) == expected["messages"], path
        assert t.n_requests == expected["requests"], path
        assert sum(len(m.get("tool_calls") or []) for m in t.messages) == expected["calls"], path
        assert roles["tool"] == expected["results"], path
        assert validate_messages(t.messages) == [], path
        assert sum(u.prompt_tokens for u in t.usage.values()) == expected["prompt"], path
        assert sum(u.cache_read_tokens for u in t.usage.values()) == expected["read"], path
        assert [(e.trigger, e.pre_tokens) for e in t.events] == expected["boundaries"], path
        for event in t.events:
            assert t.messages[event.message_index]["display_kind"] == "compact_summary"
            assert event.summary and event.summary.startswith("This session is being continued")
        assert "import_warnings" not in t.metadata, path


def test_real_main_sessions_know_their_subagent_logs(shared_transcripts: Path) -> None:
    mains = [p for p in (shared_transcripts / "claude-code").glob("*-*-*.jsonl")]
    assert len(mains) == 5
    for path in mains:
        t = load_transcript(path)
        logs = t.metadata["subagent_logs"]
        assert any("agent-acompact-" in name for name in logs)
        for name in logs:
            sub = load_transcript(path.parent / name)
            assert sub.metadata["subagent"] is True and sub.n_requests >= 1


def test_rows_claude_code_writes_itself_are_marked_and_not_user_asks(tmp_path: Path) -> None:
    from contextlab.measure.targets import targets_for
    from contextlab.transcripts.model import written_by_person

    notice = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    rows = [
        _user("u1", "Fix the flaky login test. Do not touch the database schema."),
        _assistant("a1", "m1", {"type": "text", "text": "On it."}),
        _user("u2", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
        _user("u3", "<local-command-caveat>Caveat: DO NOT respond to these messages.</local-command-caveat>"),
        _user("u4", "<command-name>/compact</command-name>\n<command-args>keep going</command-args>"),
        _user("u5", "<local-command-stdout>Compacted</local-command-stdout>"),
        _user("u6", notice),
        _assistant("a2", "m2", {"type": "text", "text": "Noted."}),
        _user("u7", "did you push?"),
        _assistant("a3", "m3", {"type": "text", "text": "Yes."}),
    ]
    t = load_transcript(_write(tmp_path / "s.jsonl", rows))
    users = [m for m in t.messages if m["role"] == "user"]
    kinds = [m.get("display_kind") for m in users]
    assert kinds == [None, "interrupt", "meta", "command", "command_output", "task_notification", None]
    assert [m["content"] for m in users if written_by_person(m)] == [users[0]["content"], "did you push?"]
    targets = targets_for(t).targets
    assert [x.texts[0] for x in targets if x.kind == "task"] == [users[0]["content"][:160], "did you push?"]
    assert [x.texts[0] for x in targets if x.kind == "instruction"] == ["Do not touch the database schema."]
