"""The host's tool-loop guardrails: what it adds to a tool output when the agent repeats itself.

Per user turn the host watches every tool call's outcome (``docs/host-loop.md`` §Tool-loop
guardrails). With its defaults (warnings on, hard stops off on the CLI) it never refuses a call; it
changes what goes into the tool row:

* a **warning** appended when a call failed again with the same arguments (from the 2nd time), when
  one tool failed three times with any arguments, or when a read-only tool returned the same result
  for the same arguments again (from the 2nd time);
* a **notice** appended from the 3rd consecutive identical call (same tool, arguments and result),
  or when the last calls repeat a cycle of 2-4 identical calls three times;
* a **stub** in place of the output from the 2nd consecutive identical call whose output is at least
  512 characters (the model already has it).

Follows ``NousResearch/hermes-agent`` ``agent/tool_guardrails.py`` @``06c25ac9``
(``ToolCallGuardrailController.after_call``, ``observe_call``) and ``run_agent.py`` @``00075f36``
(``_append_guardrail_observation``: the stub replaces the output, then the warning, then the notice are
appended), and PyPI 0.19.0 ``agent/display.py`` ``_detect_tool_failure`` for what counts as failed.
The texts are the host's; the code is ours.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

IDEMPOTENT_TOOLS = frozenset(
    {
        "read_file",
        "search_files",
        "web_search",
        "web_extract",
        "session_search",
        "skill_view",
        "skills_list",
        "browser_snapshot",
        "browser_console",
        "browser_get_images",
        "mcp_filesystem_read_file",
        "mcp_filesystem_read_text_file",
        "mcp_filesystem_read_multiple_files",
        "mcp_filesystem_list_directory",
        "mcp_filesystem_list_directory_with_sizes",
        "mcp_filesystem_directory_tree",
        "mcp_filesystem_get_file_info",
        "mcp_filesystem_search_files",
    }
)
"""Read-only tools: the same result for the same arguments again is no progress."""

PROGRESS_TOOLS = frozenset(
    {
        "write_file",
        "patch",
        "terminal",
        "execute_code",
        "browser_click",
        "browser_type",
        "browser_press",
        "browser_navigate",
        "process_manage",
        "process",
        "delegate_task",
        "send_message",
        "cronjob",
        "cronjob_manage",
        "todo",
        "todo_list",
        "memory",
        "skill_manage",
    }
)
"""A success of one of these is progress: a failing call retried after it is a new attempt."""

FILE_MUTATING_TOOLS = frozenset({"write_file", "patch"})
EXACT_FAILURE_WARN_AFTER = 2
SAME_TOOL_FAILURE_WARN_AFTER = 3
NO_PROGRESS_WARN_AFTER = 2
IDENTICAL_CALL_THRESHOLD = 3
MAX_CYCLE_PERIOD = 4
CYCLE_HISTORY = 64
STUB_MIN_CHARS = 512
STUB_ARGS_PREVIEW_CHARS = 120
_POLLER_SUFFIXES = ("_get_result", "_poll")
_POLLERS = frozenset({"process_manage"})


def canonical_json(value: Any) -> str:
    """Sorted compact JSON, non-ASCII kept (the host's canonical form of arguments and results)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def mutation_landed(tool_name: str, result: str) -> bool:
    """A ``write_file`` or ``patch`` result proving the write happened (never a failure)."""
    if tool_name not in FILE_MUTATING_TOOLS:
        return False
    data = _parsed(result.strip())
    if not isinstance(data, dict) or data.get("error"):
        return False
    return "bytes_written" in data if tool_name == "write_file" else data.get("success") is True


def tool_failed(tool_name: str, result: Any) -> bool:
    """Whether the host reads ``result`` as a failure (``_detect_tool_failure``)."""
    if not isinstance(result, str):
        return False  # multimodal outputs are successes
    if mutation_landed(tool_name, result):
        return False
    data = _parsed(result)
    if tool_name == "terminal":
        exit_code = data.get("exit_code") if isinstance(data, dict) else None
        return exit_code is not None and exit_code != 0
    if isinstance(data, dict):
        if tool_name == "memory" and data.get("success") is False and "exceed the limit" in data.get("error", ""):
            return True  # the memory store is full
        error = data.get("error") or data.get("message")
        if error and (data.get("success") is False or "error" in data):
            return True
    head = result[:500].lower()
    return '"error"' in head or '"failed"' in head or result.startswith("Error")


def result_key(result: str, tool_name: str) -> str:
    """What two outputs must share to be the same result: their parsed JSON in canonical form (an
    ``execute_code`` run's timing and kernel counter left out), else the text."""
    data = _parsed(result)
    if data is None:
        return result
    if tool_name == "execute_code" and isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "duration_seconds"}
        kernel = data.get("kernel")
        if isinstance(kernel, dict):
            data["kernel"] = {k: v for k, v in kernel.items() if k != "execution_count"}
    return canonical_json(data)


def _ordinal(count: int) -> str:
    suffix = "th" if 11 <= count % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(count % 10, "th")
    return f"{count}{suffix}"


def _is_poller(tool_name: str) -> bool:
    return tool_name in _POLLERS or tool_name.endswith(_POLLER_SUFFIXES)


def _failure_hint(tool_name: str, count: int) -> str:
    common = (
        f"{tool_name} has failed {count} times this turn. This looks like a loop. "
        "Do not switch to text-only replies; keep using tools, but diagnose before retrying. "
        "First inspect the latest error/output and verify your assumptions. "
    )
    if tool_name == "terminal":
        return common + (
            "For terminal failures, run a small diagnostic such as `pwd && ls -la` "
            "in the same tool, then try an absolute path, a simpler command, a different "
            "working directory, or a different tool such as read_file/write_file/patch."
        )
    return common + (
        "Try different arguments, a narrower query/path, an absolute path when relevant, "
        "or a different tool that can make progress. If the blocker is external, report "
        "the blocker after one diagnostic attempt instead of repeating the same failing path."
    )


@dataclass
class ToolLoopGuard:
    """The guardrails' per-turn state; :meth:`observe` returns the output as the host keeps it."""

    warnings: bool = True
    stall_guards: bool = True
    fired: int = 0
    """Outputs changed so far (a warning, a notice or a stub)."""
    _exact_failures: dict[tuple[str, str], int] = field(default_factory=dict)
    _tool_failures: dict[str, int] = field(default_factory=dict)
    _progressed: dict[tuple[str, str], bool] = field(default_factory=dict)
    _no_progress: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    _streak: tuple[Any, int, str] = (None, 0, "")
    _history: deque[tuple[tuple[str, str], str, bool]] = field(default_factory=lambda: deque(maxlen=CYCLE_HISTORY))
    _spilled_to: dict[str, str] = field(default_factory=dict)

    def reset_for_turn(self) -> None:
        """A new user turn: every count starts again."""
        self._exact_failures.clear()
        self._tool_failures.clear()
        self._progressed.clear()
        self._no_progress.clear()
        self._streak = (None, 0, "")
        self._history.clear()
        self._spilled_to.clear()

    def spilled(self, call_id: str, path: str) -> None:
        """The output of ``call_id`` was spilled to ``path`` (a later stub points there)."""
        self._spilled_to[call_id] = path

    def observe(self, tool_name: str, arguments: Any, result: Any, call_id: str) -> Any:
        """``result`` as the host keeps it after the guardrails saw it (the same object when unchanged)."""
        args = arguments if isinstance(arguments, dict) else {}
        signature = (tool_name, canonical_json(args))
        failed = tool_failed(tool_name, result)
        key = result_key(result, tool_name) if isinstance(result, str) else ""  # one parse for both guards
        warning = self._warning(tool_name, signature, result, key, failed)
        notice: str | None = None
        stub: str | None = None
        if self.stall_guards:
            notice, stub = self._stall(tool_name, signature, result, key, failed, call_id)
        kept = result
        if stub is not None and isinstance(result, str):
            kept = stub
        if warning is not None:
            kept = (kept or "") + f"\n\n[Tool loop warning: {warning}]"
        if notice is not None:
            kept = (kept or "") + "\n\n" + notice
        if kept is not result:
            self.fired += 1
        return kept

    def _warning(self, tool_name: str, signature: tuple[str, str], result: Any, key: str, failed: bool) -> str | None:
        """``after_call``: the warning text (``code; count=N; message``), or None."""
        if failed:
            if self._progressed.pop(signature, False):
                self._exact_failures.pop(signature, None)  # a mutation since: a new attempt
            exact = self._exact_failures[signature] = self._exact_failures.get(signature, 0) + 1
            same = self._tool_failures[tool_name] = self._tool_failures.get(tool_name, 0) + 1
            self._no_progress.pop(signature, None)
            if not self.warnings:
                return None
            if exact >= EXACT_FAILURE_WARN_AFTER:
                message = (
                    f"{tool_name} has failed {exact} times with identical arguments. This looks like a loop; "
                    "inspect the error and change strategy instead of retrying it unchanged."
                )
                return f"repeated_exact_failure_warning; count={exact}; {message}"
            if same >= SAME_TOOL_FAILURE_WARN_AFTER:
                return f"same_tool_failure_warning; count={same}; {_failure_hint(tool_name, same)}"
            return None
        self._exact_failures.pop(signature, None)
        self._tool_failures.pop(tool_name, None)
        if tool_name in PROGRESS_TOOLS or (isinstance(result, str) and mutation_landed(tool_name, result)):
            self._progressed.update(dict.fromkeys(self._exact_failures, True))
            self._tool_failures.clear()
        if tool_name not in IDEMPOTENT_TOOLS:
            self._no_progress.pop(signature, None)
            return None
        previous = self._no_progress.get(signature)
        repeats = previous[1] + 1 if previous is not None and previous[0] == key else 1
        self._no_progress[signature] = (key, repeats)
        if self.warnings and repeats >= NO_PROGRESS_WARN_AFTER:
            message = (
                f"{tool_name} returned the same result {repeats} times. Use the result already provided "
                "or change the query instead of repeating it unchanged."
            )
            return f"idempotent_no_progress_warning; count={repeats}; {message}"
        return None

    def _stall(
        self, tool_name: str, signature: tuple[str, str], result: Any, key: str, failed: bool, call_id: str
    ) -> tuple[str | None, str | None]:
        """``observe_call``: the notice and the stub for this call (either may be None)."""
        text = isinstance(result, str)
        current, count, first_id = self._streak
        if text and current == (signature, key):
            count += 1
        else:
            current, count, first_id = ((signature, key), 1, call_id) if text else (None, 0, call_id)
        self._streak = (current, count, first_id)
        notice: str | None = None
        if not _is_poller(tool_name) and count >= IDENTICAL_CALL_THRESHOLD:
            notice = (
                f"[hermes note: this is the {_ordinal(count)} consecutive identical call to {tool_name} "
                "with identical arguments returning the same result. Do not repeat it — change arguments, "
                "use a different tool, or proceed with what you have.]"
            )
        if text:
            self._history.append((signature, key, _is_poller(tool_name)))
        else:
            self._history.clear()
        if notice is None and text:
            cycle = self._cycle()
            if cycle is not None:
                period, laps = cycle
                notice = (
                    f"[hermes note: the last {laps} rounds repeated the same cycle of {period} tool calls "
                    f"(ending with {tool_name}) with identical arguments and identical results. Do not repeat "
                    "the batch — change arguments, use a different tool, or proceed with what you have.]"
                )
        stub: str | None = None
        if text and count >= 2 and not failed and len(result) >= STUB_MIN_CHARS:
            stub = self._stub(tool_name, signature[1], first_id)
        return notice, stub

    def _cycle(self) -> tuple[int, int] | None:
        """``(period, laps)`` of a cycle of 2-4 identical calls the latest call completes three times."""
        history = self._history
        n = len(history)
        for period in range(2, MAX_CYCLE_PERIOD + 1):
            if n < period * IDENTICAL_CALL_THRESHOLD or history[-1][:2] != history[-1 - period][:2]:
                continue  # too short, or the latest call does not repeat the one a period back
            laps = 1
            while (base := n - period * (laps + 1)) >= 0 and all(
                history[base + i][:2] == history[n - period + i][:2] for i in range(period)
            ):
                laps += 1
            if laps >= IDENTICAL_CALL_THRESHOLD:
                if all(history[n - period + i][2] for i in range(period)):
                    continue  # a cycle of pollers only is waiting, not a loop
                return period, laps
        return None

    def _stub(self, tool_name: str, arguments: str, first_id: str) -> str:
        preview = arguments
        if len(preview) > STUB_ARGS_PREVIEW_CHARS:
            preview = preview[:STUB_ARGS_PREVIEW_CHARS] + "…"
        ref = f" (tool_call_id {first_id})" if first_id else ""
        stub = (
            f"[hermes note: this result is byte-identical to the {tool_name} result earlier this turn{ref}. "
            f"Refer to that result; it has not changed. Args: {preview}]"
        )
        path = self._spilled_to.get(first_id) if first_id else None
        if path:
            stub += (
                f"\n[The referenced result was persisted to: {path} — page through it with read_file "
                "if you need the full content.]"
            )
        return stub
