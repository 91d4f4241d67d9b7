"""The one-line summaries upstream's pruning writes in place of a tool result (upstream
``_summarize_tool_result`` and its per-tool templates): thousands separators, an 80-char command cut
(77 + ``...``), per-tool wording (``NousResearch/hermes-agent@0000416b``), and a generic
``[name] k=v k=v (N chars result)`` fallback. Arguments arrive as the call's raw JSON string."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from contextlab import hermes_texts as texts

SKILL_VIEW_PRUNE_MIN_CHARS = 5_000


def skill_pruned_marker(skill: str) -> str:
    """The canonical ghost-skill marker for ``skill`` (newer upstream ``_skill_pruned_marker``)."""
    return texts.SKILL_PRUNED.format(skill=skill)


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


def _skill(n: str, a: dict[str, Any], c: str, size: int, lines: int) -> str:
    return f"[{n}] name={a.get('name', '?')} ({size:,} chars)"


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
    **dict.fromkeys(("skill_view", "skills_list", "skill_manage"), _skill),
    "vision_analyze": lambda n, a, c, size, lines: f"[vision_analyze] '{_s(a, 'question')[:50]}' ({size:,} chars)",
    "memory": _template("[memory] {action} on {target}", action="?", target="?"),
    "todo": lambda *_: "[todo] updated task list",
    "clarify": lambda *_: "[clarify] asked user a question",
    "text_to_speech": _template("[text_to_speech] generated audio ({content_len:,} chars)"),
    "cronjob": _template("[cronjob] {action}", action="?"),
    "process": _template("[process] {action} session={session_id}", action="?", session_id="?"),
}


def summarize(name: str, raw_args: str, content: str, *, skill_marker: bool = False) -> str:
    """The upstream one-liner for a tool result; never raises (a malformed call gets the bare form).
    ``skill_marker`` (newer upstream): a ``skill_view`` body over 5,000 chars gets the skill-pruning
    marker, so the model knows to reload it."""
    try:
        args = _json_dict(raw_args)
        size = len(content)
        lines = content.count("\n") + 1 if content.strip() else 0
        handler = SUMMARIZERS.get(name)
        if handler is not None:
            line = handler(name, args, content, size, lines)
            if skill_marker and name == "skill_view" and size > SKILL_VIEW_PRUNE_MIN_CHARS:
                line += " " + skill_pruned_marker(str(args.get("name", "?")))
            return line
        first = "".join(f" {k}={str(v)[:40]}" for k, v in list(args.items())[:2])
        return f"[{name}]{first} ({size:,} chars result)"
    except Exception:  # a summary must never crash compression (upstream's guard)
        return f"[{name}] ({len(content) if isinstance(content, str) else 0:,} chars result)"


def is_stub(content: str) -> bool:
    """A result already replaced by a one-liner (upstream ``_is_summary_stub``)."""
    return content.startswith("[") and " chars)" in content and len(content) < 400
