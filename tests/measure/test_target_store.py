"""The on-disk target store: a second process reads a transcript's targets instead of extracting them."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import os
from pathlib import Path

import pandas as pd
import pytest

import contextlab
from contextlab import load_dataset, replay
from contextlab.measure import target_store, targets
from contextlab.measure.targets import forget, scans_for, targets_for
from contextlab.transcripts import Transcript

from .test_mining import recorded


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "targets"
    monkeypatch.setenv(target_store.ENV_DIRECTORY, str(folder))
    return folder


def fresh(transcript: Transcript) -> Transcript:
    """An equal transcript as a new object (what a new process parses), with nothing cached."""
    forget(transcript)
    return copy.deepcopy(transcript)


def no_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("targets were extracted although the store holds them")

    monkeypatch.setattr(targets, "_extract", refuse)


def without_facts(transcript: Transcript) -> Transcript:
    return dataclasses.replace(transcript, facts=[], metadata={})


@pytest.mark.parametrize("kind", ["gold", "mined"])
def test_a_stored_transcript_replays_as_an_extracted_one(
    kind: str, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = load_dataset("coding-agent-short")
    if kind == "mined":
        session = without_facts(session)
    first = fresh(session)
    extracted = replay(first, "mask_window", context_length=16_000)
    assert targets_for(first).facts_source == ("gold" if kind == "gold" else "mined")
    assert len(list(store.glob("*.json"))) == 1

    second = fresh(session)
    no_extraction(monkeypatch)
    read = replay(second, "mask_window", context_length=16_000)
    assert targets_for(second) == targets_for(first)
    assert scans_for(second).rows() == scans_for(first).rows()
    timings = ["engine_ms"]
    pd.testing.assert_frame_equal(read.trace.drop(columns=timings), extracted.trace.drop(columns=timings))
    assert set(read.frames) == set(extracted.frames)
    for name, frame in extracted.frames.items():
        pd.testing.assert_frame_equal(read.frames[name], frame)
    untimed = {"engine_ms_total", "wall_s"}
    assert {k: v for k, v in read.summary.items() if k not in untimed} == {
        k: v for k, v in extracted.summary.items() if k not in untimed
    }


def test_a_changed_transcript_is_extracted_again(store: Path) -> None:
    session = recorded()
    targets_for(fresh(session))
    edited = fresh(session)
    edited.messages[2]["content"] = "commit 0a1b2c3d4e5f broke src/app/deploy.py"
    facts = {t.key for t in targets_for(edited).targets if t.kind == "fact"}
    assert "mined-recall:0a1b2c3d4e5f" not in facts  # the agent never quotes the new sha
    assert "mined-recall:9f8e7d6c5b4a" not in facts  # and the old one is gone from the tool output
    assert len(list(store.glob("*.json"))) == 2


@pytest.mark.parametrize(
    "damage",
    [
        "not json at all {",
        "[1, 2, 3]",
        '{"fields": ["kind"]}',
        "TRUNCATE",
        "UNKNOWN_TEXT",
        "ROWS",
        "ROW_POSITION",
        "TARGET_INDEX",
    ],
)
def test_a_damaged_file_is_extracted_again_and_replaced(damage: str, store: Path) -> None:
    session = recorded()
    expected = targets_for(fresh(session))
    (path,) = store.glob("*.json")
    original = path.read_text()
    document = json.loads(original)
    if damage == "TRUNCATE":
        text = path.read_text()[: len(path.read_text()) // 2]
    elif damage == "UNKNOWN_TEXT":
        document["index_texts"] = document["index_texts"][1:]
        text = json.dumps(document)
    elif damage == "ROWS":
        document["row_ids"] = document["row_ids"][1:]
        text = json.dumps(document)
    elif damage == "ROW_POSITION":
        document["row_ids"][0] = [len(document["index_texts"])]
        text = json.dumps(document)
    elif damage == "TARGET_INDEX":
        document["targets"][0][document["fields"].index("message_index")] = "3"
        text = json.dumps(document)
    else:
        text = damage
    path.write_text(text)
    assert targets_for(fresh(session)) == expected
    assert path.read_text() == original


@pytest.mark.parametrize("setting", ["off", "0", "false", ""])
def test_the_store_can_be_turned_off(setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(target_store.ENV_DIRECTORY, setting)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert target_store.directory() is None
    assert targets_for(fresh(recorded())).facts_source == "mined"
    assert not any(tmp_path.rglob("*.json"))


def test_the_default_directory_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(target_store.ENV_DIRECTORY, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert target_store.directory() == tmp_path / "xdg" / "contextlab" / "targets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert target_store.directory() == tmp_path / "home" / ".cache" / "contextlab" / "targets"


def test_an_unwritable_store_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(target_store.ENV_DIRECTORY, str(blocker / "targets"))
    monkeypatch.setattr(target_store, "_unwritable", set())
    with pytest.warns(RuntimeWarning, match=r"a-file/targets cannot be written .*CONTEXTLAB_TARGET_CACHE") as seen:
        assert targets_for(fresh(recorded())).facts_source == "mined"
        assert targets_for(fresh(without_facts(recorded()))).facts_source == "mined"  # a second write: no repeat
    assert len(seen) == 1
    assert blocker.read_text() == "not a directory"


def test_a_write_leaves_no_partial_file_and_old_files_are_pruned(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target_store, "KEEP_FILES", 2)
    for key in ("a", "b", "c"):
        target_store.save(key, {"key": key})
        os.utime(store / f"{key}.json", ns=(1, {"a": 1, "b": 2, "c": 3}[key] * 10**9))
        target_store._prune(store)
    assert sorted(p.name for p in store.iterdir()) == ["b.json", "c.json"]
    assert target_store.load("c") == {"key": "c"} and target_store.load("a") is None


def test_the_key_covers_every_module_extraction_runs() -> None:
    # The rules' sources are part of the key: a module extraction imports (transitively) that the key
    # left out could change the targets without changing the key. Package ``__init__`` files are
    # not followed: they re-export, they hold no rule.
    root = Path(contextlab.__file__).parent

    def source(name: str) -> Path | None:
        path = root.joinpath(*name.split(".")[1:]).with_suffix(".py")
        return path if path.is_file() else None

    seen: set[str] = set()
    pending = ["contextlab.measure.targets"]
    while pending:
        name = pending.pop()
        path = source(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("contextlab"):
                pending.append(node.module)
                pending.extend(f"{node.module}.{alias.name}" for alias in node.names)  # a submodule
            elif isinstance(node, ast.Import):
                pending.extend(alias.name for alias in node.names if alias.name.startswith("contextlab"))
    assert seen == set(target_store.RULE_MODULES)


def test_a_rule_change_is_a_new_key(monkeypatch: pytest.MonkeyPatch) -> None:
    session = recorded()
    before = target_store.key_of(session)
    assert before is not None and target_store.key_of(copy.deepcopy(session)) == before
    monkeypatch.setattr(target_store, "_rules", "another rule set")
    assert target_store.key_of(session) != before


@pytest.mark.parametrize("kind", ["gold", "mined"])
def test_a_replay_of_a_stored_file_scans_only_rows_it_sends_differently(
    kind: str, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Extraction scans every row as a replay sends it (its wire form) and stores the answers, so a
    later `passthrough` replay of the file, which sends every row as it is, scans none of them again:
    only the system prompt, which is no transcript row, the one output the host spilled to a preview
    (docs/host-loop.md §Tool results) and the one row the host's history repair wrote (the session's
    two adjacent assistant rows, merged: docs/host-loop.md §History repair)."""
    from contextlab.measure import scan

    session = load_dataset("coding-agent-short")
    if kind == "mined":
        session = without_facts(session)
    replay(fresh(session), "passthrough", context_length=16_000)
    scanned: list[str] = []
    matched = scan.TextIndex.matched

    def counting(self: scan.TextIndex, payload: str) -> set[str]:
        scanned.append(payload)
        return matched(self, payload)

    monkeypatch.setattr(scan.TextIndex, "matched", counting)
    result = replay(fresh(session), "passthrough", context_length=16_000)
    assert result.summary["history_repairs"] == 1 and result.summary["tool_outputs_spilled"] == 1
    assert len(scanned) == 3 and scanned[0].startswith(session.system_prompt.strip()[:40])
    assert scanned[1].startswith("<persisted-output>\nThis tool result was too large (24,560 characters")
    assert "Picking up the plan" in scanned[2] and '{"path":"src/orbit/bucket_receipt.py"}' in scanned[2]
