"""tau-bench result files: a JSON list of ``{task_id, trial, reward, info, traj}``; ``traj`` is an
OpenAI chat message list. One transcript per task and trial."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextlab.errors import TranscriptError
from contextlab.transcripts.model import Transcript
from contextlab.transcripts.openai_chat import transcript_from_messages


def looks_like(document: Any) -> bool:
    return isinstance(document, list) and bool(document) and isinstance(document[0], dict) and "traj" in document[0]


def load(path: Path, document: Any) -> list[Transcript]:
    source = str(path)
    out = []
    for i, run in enumerate(document):
        if not isinstance(run, dict) or not isinstance(run.get("traj"), list):
            raise TranscriptError(source, f"run {i}", "field 'traj': expected a list of messages")
        task, trial = run.get("task_id", i), run.get("trial", 0)
        out.append(
            transcript_from_messages(
                run["traj"],
                source,
                f"tau-bench-{task}-{trial}",
                where_prefix=f"run {i}, message",
                source_format="tau-bench",
                metadata={"task_id": task, "trial": trial, "reward": run.get("reward")},
            )
        )
    return out
