"""OpenTelemetry GenAI spans and Langfuse generations exported as JSON (or JSON Lines).

Every LLM call span is one full request, so the conversation is rebuilt from the growing prefix
(:mod:`~contextlab.transcripts.per_request`), calls ordered by start time, each keeping its usage.

Spans are found in an OTLP JSON export (``resourceSpans[].scopeSpans[].spans[]``, attributes as
``[{key, value: {stringValue|intValue|...}}]``), or as span objects whose ``attributes`` is a plain
mapping (console and collector exporters), in a list, one per line, or under ``spans``. A span is an
LLM call when it carries GenAI attributes (semantic conventions, https://opentelemetry.io/docs/specs/
semconv/gen-ai/): the current ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON, messages
with ``parts`` of type ``text``, ``tool_call``, ``tool_call_response``) and
``gen_ai.system_instructions``, or the older indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
attributes; usage from ``gen_ai.usage.input_tokens`` (or ``prompt_tokens``), ``output_tokens``
(or ``completion_tokens``) and ``cache_read_input_tokens``. Langfuse exports hold observations of
``type: "GENERATION"`` with ``input`` (messages), ``output`` (a message or text), ``model``,
``startTime`` and ``usage`` / ``usageDetails``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextlab.engine import Message
from contextlab.errors import TranscriptError
from contextlab.transcripts.io import json_or_value, token_count
from contextlab.transcripts.issues import ImportLog
from contextlab.transcripts.model import RecordedUsage, Transcript
from contextlab.transcripts.openai_chat import check_message
from contextlab.transcripts.per_request import Step, parse_time, rebuild

INPUT_KEYS = ("gen_ai.input.messages", "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.prompt")


def looks_like(document: Any) -> bool:
    return bool(_calls(document, limit=1))


def looks_like_rows(rows: list[tuple[int, Any]]) -> bool:
    return any(_calls(row, limit=1) for _, row in rows[:3])


def load(path: Path, document: Any) -> list[Transcript]:
    return _load(path, _calls(document))


def load_rows(path: Path, rows: list[tuple[int, Any]]) -> list[Transcript]:
    found: list[dict[str, Any]] = []
    for _, row in rows:
        found.extend(_calls(row))
    return _load(path, found)


# --------------------------------------------------------------------------- finding calls


def _calls(value: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """LLM-call spans and Langfuse generations anywhere in an export (depth-first, bounded)."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and (limit is None or len(found) < limit):
        item, depth = stack.pop()
        if depth > 8:
            continue
        if isinstance(item, dict):
            if _is_generation(item) or _is_genai_span(item):
                found.append(item)
                continue
            stack.extend((v, depth + 1) for v in reversed(list(item.values())) if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in reversed(item) if isinstance(v, (dict, list)))
    return found


def _is_generation(item: dict[str, Any]) -> bool:
    return item.get("type") == "GENERATION" and "input" in item


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes as a plain mapping (OTLP ``[{key, value: {...Value}}]`` unwrapped)."""
    raw = span.get("attributes")
    if isinstance(raw, dict):
        return raw
    out: dict[str, Any] = {}
    if isinstance(raw, list):
        for entry in raw:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                out[entry["key"]] = _otlp_value(entry.get("value"))
    return out


def _otlp_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if isinstance(value.get("arrayValue"), dict):
        return [_otlp_value(v) for v in value["arrayValue"].get("values") or []]
    return value


def _is_genai_span(item: dict[str, Any]) -> bool:
    if "attributes" not in item:
        return False
    attrs = attributes(item)
    return any(key in attrs for key in INPUT_KEYS)


# --------------------------------------------------------------------------- calls to steps


def _load(path: Path, calls: list[dict[str, Any]]) -> list[Transcript]:
    source = str(path)
    if not calls:
        raise TranscriptError(source, None, "no LLM-call spans or generations in this export")
    log = ImportLog(source)
    timed = []
    for k, call in enumerate(calls):
        where = f"span {k}"
        step = _generation(call, source, where) if _is_generation(call) else _span(call, source, where)
        timed.append((step.timestamp if step.timestamp is not None else float("inf"), k, step))
    steps = [s for _, _, s in sorted(timed, key=lambda x: (x[0], x[1]))]
    kind = "langfuse" if all(_is_generation(c) for c in calls) else "otel-genai"
    return rebuild(steps, source, path.name.split(".")[0], kind, log, {"calls_in_file": len(calls)})


def _span(span: dict[str, Any], source: str, where: str) -> Step:
    attrs = attributes(span)
    system: str | None = None
    if "gen_ai.input.messages" in attrs:
        messages = _semconv_messages(attrs["gen_ai.input.messages"], source, f"{where}, gen_ai.input.messages")
        output = _semconv_messages(attrs.get("gen_ai.output.messages"), source, f"{where}, gen_ai.output.messages")
        instructions = attrs.get("gen_ai.system_instructions")
        if instructions is not None:
            system = _parts_text(json_or_value(instructions))
    else:
        messages = _indexed(attrs, "gen_ai.prompt", source, where)
        output = _indexed(attrs, "gen_ai.completion", source, where)
    if messages and messages[0]["role"] == "system" and system is None:
        system = str(messages.pop(0).get("content") or "")
    response = next((m for m in output if m["role"] == "assistant"), None)
    usage = _usage(
        attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens")),
        attrs.get("gen_ai.usage.output_tokens", attrs.get("gen_ai.usage.completion_tokens")),
        attrs.get("gen_ai.usage.cache_read_input_tokens", attrs.get("gen_ai.usage.cache_read.input_tokens")),
        source,
        where,
    )
    model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    stamp = _start(span)
    return Step(messages, response, usage, system, [], model if isinstance(model, str) else None, stamp, where)


def _start(span: dict[str, Any]) -> float | None:
    nanos = span.get("startTimeUnixNano", span.get("start_time_unix_nano"))
    if nanos is not None:
        try:
            return int(nanos) / 1e9
        except (TypeError, ValueError):
            return None
    return parse_time(span.get("start_time") or span.get("startTime") or span.get("timestamp"))


def _semconv_messages(value: Any, source: str, where: str) -> list[Message]:
    value = json_or_value(value)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TranscriptError(source, where, "expected a JSON list of messages")
    out: list[Message] = []
    for i, raw in enumerate(value):
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            raise TranscriptError(source, f"{where}[{i}]", "expected a message with a string 'role'")
        parts = raw.get("parts")
        if not isinstance(parts, list):
            out.append(check_message({"role": raw["role"], "content": raw.get("content")}, source, f"{where}[{i}]"))
            continue
        texts, calls = [], []
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "tool_call":
                arguments = part.get("arguments")
                calls.append(
                    {
                        "id": str(part.get("id") or ""),
                        "type": "function",
                        "function": {
                            "name": str(part.get("name") or ""),
                            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                        },
                    }
                )
            elif kind == "tool_call_response":
                response = part.get("response", part.get("result"))
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(part.get("id") or ""),
                        "content": response if isinstance(response, str) else json.dumps(response),
                    }
                )
            elif isinstance(part.get("content"), str):
                texts.append(part["content"])
        role = raw["role"]
        if role == "tool" and not texts:
            continue
        message: Message = {"role": "assistant" if role == "model" else role, "content": "\n".join(texts)}
        if calls:
            message["tool_calls"] = calls
            message["content"] = message["content"] or None
        out.append(check_message(message, source, f"{where}[{i}]"))
    return out


def _parts_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("content")) for p in value if isinstance(p, dict) and "content" in p)
    return json.dumps(value)


def _indexed(attrs: dict[str, Any], prefix: str, source: str, where: str) -> list[Message]:
    out: list[Message] = []
    i = 0
    while f"{prefix}.{i}.role" in attrs or f"{prefix}.{i}.content" in attrs:
        base = f"{prefix}.{i}"
        message: Message = {"role": str(attrs.get(f"{base}.role") or "user"), "content": attrs.get(f"{base}.content")}
        calls = []
        j = 0
        while f"{base}.tool_calls.{j}.name" in attrs:
            calls.append(
                {
                    "id": str(attrs.get(f"{base}.tool_calls.{j}.id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(attrs[f"{base}.tool_calls.{j}.name"]),
                        "arguments": str(attrs.get(f"{base}.tool_calls.{j}.arguments") or "{}"),
                    },
                }
            )
            j += 1
        if calls:
            message["tool_calls"] = calls
        if message["role"] == "tool":
            message["tool_call_id"] = str(attrs.get(f"{base}.tool_call_id") or "")
        out.append(check_message(message, source, f"{where}, {base}"))
        i += 1
    return out


def _usage(prompt: Any, output: Any, cached: Any, source: str, where: str) -> RecordedUsage | None:
    if prompt is None and output is None:
        return None
    try:
        total = token_count(prompt, "input_tokens")
        completion = token_count(output, "output_tokens")
        read = token_count(cached, "cache_read_input_tokens")
    except ValueError as error:
        raise TranscriptError(source, where, str(error)) from None
    raw = {"prompt_tokens": total, "completion_tokens": completion, "prompt_tokens_details": {"cached_tokens": read}}
    return RecordedUsage(total, completion, cache_read_tokens=read, raw=raw)


def _generation(item: dict[str, Any], source: str, where: str) -> Step:
    raw_input = json_or_value(item.get("input"))
    if isinstance(raw_input, dict) and isinstance(raw_input.get("messages"), list):
        raw_input = raw_input["messages"]
    if not isinstance(raw_input, list):
        raw_input = [{"role": "user", "content": raw_input if isinstance(raw_input, str) else json.dumps(raw_input)}]
    messages = [check_message(m, source, f"{where}, input[{i}]") for i, m in enumerate(raw_input)]
    system = None
    if messages and messages[0]["role"] == "system":
        system = str(messages.pop(0).get("content") or "")
    output = json_or_value(item.get("output"))
    response: Message | None = None
    if isinstance(output, dict) and ("content" in output or "tool_calls" in output):
        response = check_message({**output, "role": "assistant"}, source, f"{where}, output")
    elif isinstance(output, str):
        response = {"role": "assistant", "content": output}
    details: dict[str, Any] = item["usageDetails"] if isinstance(item.get("usageDetails"), dict) else {}
    usage_obj: dict[str, Any] = item["usage"] if isinstance(item.get("usage"), dict) else {}
    prompt = details.get("input", usage_obj.get("input", usage_obj.get("promptTokens")))
    completion = details.get("output", usage_obj.get("output", usage_obj.get("completionTokens")))
    cached = next(
        (details[k] for k in ("cache_read_input_tokens", "input_cached_tokens", "input_cache_read") if k in details),
        None,
    )
    usage = _usage(prompt, completion, cached, source, where)
    model = item.get("model")
    return Step(
        messages,
        response,
        usage,
        system,
        [],
        model if isinstance(model, str) else None,
        parse_time(item.get("startTime")),
        where,
    )
