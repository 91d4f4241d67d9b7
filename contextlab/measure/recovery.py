"""Recoverable retention: can the engine's own tools bring a missing fact back? (engines.md §6 Q2)

An oracle policy, not an agent: it searches the engine's search tool for the fact's *key* (its most
identifier-like token, or its three longest words), then expands up to ``k - 1`` ids the search
returned, and stops at the first tool output that contains the fact. The answer is the number of
calls it took (``None``: not reachable within ``k``) and the tokens those calls returned.

Tools are found from ``get_tool_schemas()``: the search tool takes a required ``query``; the
expand tool takes a required ``id`` (a name with ``expand`` preferred over ``describe``). The oracle
never passes ``messages=`` (which would let an engine ingest the live history), so a recall tool
that only reads its store is not changed by being measured.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from contextlab.tokens import estimate_tokens_rough

DEFAULT_K = 4
"""One search plus up to three expansions (engines.md §6 Q2)."""

_KEY_TOKEN = re.compile(r"[A-Za-z0-9_./:#-]{4,}")
_WORD = re.compile(r"\w{3,}")


@dataclass(frozen=True)
class Reach:
    """Oracle outcome for one fact: calls needed (None: unreachable within k) and tokens returned."""

    calls: int | None
    tokens: int


@functools.lru_cache(maxsize=4096)  # a fact missing at several commits is looked up at each
def fact_key(text: str) -> tuple[str, str]:
    """``(query, mode)``: the most identifier-like token as a regex, else the 3 longest words (fts)."""
    tokens = [t for t in _KEY_TOKEN.findall(text) if any(c.isdigit() for c in t) or any(c in "_./:#-" for c in t)]
    if tokens:
        best = max(tokens, key=lambda t: (len(t), t))
        return re.escape(best), "regex"
    words = sorted(set(_WORD.findall(text)), key=lambda w: (-len(w), w))[:3]
    if words:
        return " ".join(words), "fts"
    return re.escape(text), "regex"


def _schema_parts(schema: dict[str, Any]) -> tuple[str, set[str], set[str]]:
    function = _dict(schema.get("function")) or schema
    name = str(function.get("name") or "")
    params = _dict(function.get("parameters"))
    properties = _dict(params.get("properties"))
    required = params.get("required")
    return name, set(properties), {str(r) for r in required} if isinstance(required, list) else set()


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _ids(value: Any, out: list[str], limit: int) -> None:
    """Ids in a search result, in order, into ``out`` until it holds ``limit``: ``id`` first, then
    ``covering_summary`` / ``*_id`` keys (the walk stops there: a search lists tens of matches and
    the oracle expands the first few ids)."""
    if isinstance(value, dict):
        for key in ("id", "covering_summary", "summary_id", "node_id"):
            found = value.get(key)
            if isinstance(found, str) and found and found not in out:
                out.append(found)
                if len(out) >= limit:
                    return
        for key, child in value.items():
            if isinstance(child, (dict, list)) and key not in ("text",):
                _ids(child, out, limit)
                if len(out) >= limit:
                    return
    elif isinstance(value, list):
        for child in value:
            _ids(child, out, limit)
            if len(out) >= limit:
                return


class RecoveryOracle:
    """Runs the search-then-expand policy against one engine instance."""

    def __init__(self, engine: Any, k: int = DEFAULT_K) -> None:
        self._engine = engine
        self.k = max(1, int(k))
        self.search_tool: str | None = None
        self.search_params: set[str] = set()
        self.expand_tool: str | None = None
        try:
            schemas = engine.get_tool_schemas() or []
        except Exception:
            schemas = []
        expanders: list[str] = []
        for schema in schemas if isinstance(schemas, list) else []:
            if not isinstance(schema, dict):
                continue
            name, properties, required = _schema_parts(schema)
            if "query" in required and self.search_tool is None:
                self.search_tool, self.search_params = name, properties
            elif "id" in required:
                expanders.append(name)
        expanders.sort(key=lambda n: (0 if "expand" in n else 1 if "read" in n else 2, n))
        self.expand_tool = expanders[0] if expanders else None

    @property
    def available(self) -> bool:
        """The engine exposes a search tool."""
        return self.search_tool is not None

    def _call(self, name: str, args: dict[str, Any]) -> str:
        """The tool's output as text (a tool that raised gave none: its error message may echo the
        query, which is no recovered fact)."""
        try:
            raw = self._engine.handle_tool_call(name, args)
        except Exception:  # a broken tool makes the fact unreachable, never the run fail
            return ""
        return raw if isinstance(raw, str) else json.dumps(raw, default=str)

    def reach(self, fact_text: str) -> Reach:
        """How many calls the oracle needs to see ``fact_text`` (within ``k``), and the tokens returned."""
        if self.search_tool is None:
            return Reach(None, 0)
        query, mode = fact_key(fact_text)
        args: dict[str, Any] = {"query": query}
        if "mode" in self.search_params:
            args["mode"] = mode
        elif mode == "regex":
            args["query"] = query.replace("\\", "")  # a plain search tool gets the literal
        text = self._call(self.search_tool, args)
        tokens = estimate_tokens_rough(text)
        if fact_text in text:
            return Reach(1, tokens)
        decoded = _decoded(text)  # its ids are what the oracle expands
        if _contains(text, fact_text, decoded):
            return Reach(1, tokens)
        if self.expand_tool is None or decoded is None:
            return Reach(None, tokens)
        ids: list[str] = []
        if self.k > 1:
            _ids(decoded, ids, self.k - 1)
        calls = 1
        for ident in ids:
            calls += 1
            text = self._call(self.expand_tool, {"id": ident})
            tokens += estimate_tokens_rough(text)
            if _contains(text, fact_text):
                return Reach(calls, tokens)
        return Reach(None, tokens)


def _decoded(text: str) -> Any:
    """``text`` as JSON (None: it is not JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


_WRITTEN_AS_IS = re.compile(r"[A-Za-z0-9 _.,:;=+*#%()\[\]{}-]*")
"""Characters every JSON encoder writes unescaped (ASCII letters, digits, space and punctuation no
escaping rule touches: not quotes, backslash, slash, ``<>&`` or controls)."""


def _contains(raw: str, needle: str, decoded: Any = None) -> bool:
    """Whether a tool output holds ``needle``: in its raw text, or in a string of its decoded JSON
    (an escaped quote or line break in the fact is only found there). ``decoded``: the output's
    JSON if the caller has it (else it is decoded here, only when it must be read)."""
    if needle in raw:
        return True
    if _WRITTEN_AS_IS.fullmatch(needle) is not None:
        # A decoded string holding such a needle is written with it verbatim: raw would hold it.
        return False
    if decoded is None:
        decoded = _decoded(raw)
    return decoded is not None and any(needle in s for s in _strings(decoded))
