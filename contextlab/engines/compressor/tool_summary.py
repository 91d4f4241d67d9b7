"""The one-line summaries upstream's pruning writes in place of a tool result (upstream
``_summarize_tool_result`` and its per-tool templates): thousands separators, an 80-char command cut
(77 + ``...``), per-tool wording, the skill-pruning marker on large ``skill_view`` bodies, and a
generic ``[name] k=v k=v (N chars result)`` fallback. Arguments arrive as the call's raw JSON string."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from contextlab.engines.compressor import texts

SKILL_VIEW_PRUNE_MIN_CHARS = 5_000
CLARIFY_MAX_CHARS = 199  # strictly below the 200-char prune floor, so a later pass keeps it
_CLARIFY_NON_ANSWERS = (
    "The user did not provide a response",
    "[user did not respond",
    "[clarify prompt could not be delivered",
    "[oneshot mode:",
)
_BROWSER = ("browser_navigate", "browser_click", "browser_snapshot", "browser_type", "browser_scroll", "browser_vision")


def _json_dict(text: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(text) if text else {}
    except (json.JSONDecodeError, TypeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _s(args: dict[str, Any], key: str, default: str = "") -> str:
    value = args.get(key, default)
    return value if isinstance(value, str) else default if value is None else str(value)


def skill_pruned_marker(skill: str) -> str:
    """The canonical ghost-skill marker for ``skill`` (upstream ``_skill_pruned_marker``)."""
    return texts.SKILL_PRUNED.format(skill=skill)


def _terminal(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    cmd = _s(a, "command")
    cmd = cmd if len(cmd) <= 80 else cmd[:77] + "..."
    m = re.search(r'"exit_code"\s*:\s*(-?\d+)', c)
    return f"[terminal] ran `{cmd}` -> exit {m.group(1) if m else '?'}, {lines} lines output"


def _write_file(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    written: object = _s(a, "content").count("\n") + 1 if a.get("content") else "?"
    return f"[write_file] wrote to {a.get('path', '?')} ({written} lines)"


def _search_files(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    m = re.search(r'"total_count"\s*:\s*(\d+)', c)
    return (
        f"[search_files] {a.get('target', 'content')} search for '{a.get('pattern', '?')}' "
        f"in {a.get('path', '.')} -> {m.group(1) if m else '?'} matches"
    )


def _browser(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    url, ref = a.get("url", ""), a.get("ref", "")
    detail = f" {url}" if url else (f" ref={ref}" if ref else "")
    return f"[{n}]{detail} ({size:,} chars)"


def _web_extract(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    urls = a.get("urls", [])
    first: Any = urls[0] if isinstance(urls, list) and urls else "?"
    if isinstance(first, dict):
        first = first.get("url") or first.get("href") or "?"
    elif not isinstance(first, str):
        first = "?"
    if isinstance(urls, list) and len(urls) > 1:
        first += f" (+{len(urls) - 1} more)"
    return f"[web_extract] {first} ({size:,} chars)"


def _delegate(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    goal = _s(a, "goal")
    goal = goal if len(goal) <= 60 else goal[:57] + "..."
    return f"[delegate_task] '{goal}' ({size:,} chars result)"


def _execute_code(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    code = _s(a, "code")
    preview = code[:60].replace("\n", " ") + ("..." if len(code) > 60 else "")
    return f"[execute_code] `{preview}` ({lines} lines output)"


def _skill_view(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    skill = a.get("name", "?")
    marker = " " + skill_pruned_marker(str(skill)) if size > SKILL_VIEW_PRUNE_MIN_CHARS else ""
    return f"[skill_view] name={skill} ({size:,} chars)" + marker


def _failure_suffix(c: str) -> str:
    payload = _json_dict(c)
    error = payload.get("error")
    if not error and payload.get("success") is not False:
        return ""
    preview = " ".join(str(error).split())[:80] if error else ""
    return f" FAILED: {preview}" if preview else " FAILED"


def _skill_manage(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    ops = a.get("operations")
    if isinstance(ops, list) and ops:
        rendered = [f"{_s(op, 'action', '?')} {_s(op, 'name', '?')}" for op in ops if isinstance(op, dict)]
        summary = f"[skill_manage] {'; '.join(rendered[:3])}"
        if len(ops) > 3:
            summary += f" (+{len(ops) - 3} more)"
    else:
        summary = f"[skill_manage] {_s(a, 'action', '?')} {_s(a, 'name', '?')}"
    return f"{summary}{_failure_suffix(c)} ({size:,} chars)"


def _skills_list(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    category = _s(a, "category")
    count = _json_dict(c).get("count")
    scope = f" category={category}" if category else ""
    listed = f" {count} skills" if isinstance(count, int) else ""
    return f"[skills_list]{scope}{listed}{_failure_suffix(c)} ({size:,} chars)"


def _clarify(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    parsed = _json_dict(c)
    response: Any = parsed.get("user_response")
    if response is None and isinstance(parsed.get("responses"), list):
        collected: list[str] = []
        for entry in parsed["responses"]:
            single = entry.get("user_response") if isinstance(entry, dict) else None
            if isinstance(single, str) and single:
                collected.append(single)
            elif isinstance(single, list) and all(isinstance(x, str) and x for x in single):
                collected.extend(single)
        response = collected or None
    answer = (isinstance(response, str) and bool(response)) or (
        isinstance(response, list) and bool(response) and all(isinstance(x, str) and x for x in response)
    )
    items = [response] if isinstance(response, str) else response if isinstance(response, list) else []
    sentinel = any(isinstance(x, str) and x.lstrip().startswith(_CLARIFY_NON_ANSWERS) for x in items)
    if answer and not sentinel:
        dumped = json.dumps(response, ensure_ascii=False).encode("utf-8", errors="backslashreplace").decode("utf-8")
        summary = "[clarify] user responded: " + dumped
        if len(summary) > CLARIFY_MAX_CHARS:
            summary = summary[: CLARIFY_MAX_CHARS - len("...[truncated]")].rstrip() + "...[truncated]"
        return summary
    return "[clarify] asked user a question"


def _template(template: str, **defaults: Any) -> Callable[[str, dict[str, Any], str, int, int], str]:
    return lambda n, a, c, size, lines: template.format_map({**defaults, **a, "content_len": size})


SUMMARIZERS: dict[str, Callable[[str, dict[str, Any], str, int, int], str]] = {
    "terminal": _terminal,
    "read_file": _template("[read_file] read {path} from line {offset} ({content_len:,} chars)", path="?", offset=1),
    "write_file": _write_file,
    "search_files": _search_files,
    "patch": _template("[patch] {mode} in {path} ({content_len:,} chars result)", mode="replace", path="?"),
    **dict.fromkeys(_BROWSER, _browser),
    "web_search": _template("[web_search] query='{query}' ({content_len:,} chars result)", query="?"),
    "web_extract": _web_extract,
    "delegate_task": _delegate,
    "execute_code": _execute_code,
    "skill_view": _skill_view,
    "skills_list": _skills_list,
    "skill_manage": _skill_manage,
    "vision_analyze": lambda n, a, c, size, lines: f"[vision_analyze] '{_s(a, 'question')[:50]}' ({size:,} chars)",
    "memory": _template("[memory] {action} on {target}", action="?", target="?"),
    "todo": lambda *_: "[todo] updated task list",
    "todo_list": lambda *_: "[todo] updated task list",
    "clarify": _clarify,
    "text_to_speech": _template("[text_to_speech] generated audio ({content_len:,} chars)"),
    "cronjob": _template("[cronjob] {action}", action="?"),
    "cronjob_manage": _template("[cronjob] {action}", action="?"),
    "process": _template("[process] {action} session={session_id}", action="?", session_id="?"),
    "process_manage": _template("[process] {action} session={session_id}", action="?", session_id="?"),
}


def summarize(name: str, raw_args: str, content: str) -> str:
    """The upstream one-liner for a tool result; never raises (a malformed call gets the bare form)."""
    try:
        args = _json_dict(raw_args)
        size = len(content)
        lines = content.count("\n") + 1 if content.strip() else 0
        handler = SUMMARIZERS.get(name)
        if handler is not None:
            return handler(name, args, content, size, lines)
        first = "".join(f" {k}={str(v)[:40]}" for k, v in list(args.items())[:2])
        return f"[{name}]{first} ({size:,} chars result)"
    except Exception:  # a summary must never crash compression (upstream's guard)
        return f"[{name}] ({len(content) if isinstance(content, str) else 0:,} chars result)"


def is_stub(content: str) -> bool:
    """A result already replaced by a one-liner (upstream ``_is_summary_stub``)."""
    return content.startswith("[") and " chars)" in content and len(content) < 400
