"""Drives the real Hermes loop (``AIAgent.run_conversation``) over a recorded conversation and prints
the provider requests it sent, as JSON.

Run with the real host's python (``tests/hermes``): ``python real_loop.py TRANSCRIPT WINDOW [LIMIT]``
(with LIMIT, it stops at the first user message after LIMIT requests and prints those). A
local OpenAI-compatible server answers each request with the next recorded assistant message, says
the model's window is WINDOW and reports each request's exact token count (contextlab's counter) as
its usage; the recorded tools are registered in the host's tool registry with handlers that return
the recorded outputs. The agent keeps a session store, as the CLI does, and its built-in compressor
is the real one with its summary call answered offline (``hermes.compressor``'s seam). Each recorded
user message is one ``run_conversation`` call, given the history the previous call returned, as
the host's CLI does. The output also gives the compressor's compaction count when each request was
sent.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from contextlab import load_transcript
from contextlab.tokens import ExactCounter
from contextlab.transcripts.model import Transcript

GO_ON = "Go on."
DISPLAY_KEYS = frozenset({"display_kind", "display_metadata"})
"""A Claude Code log's display keys (an error flag, a meta row): the loop's rows cannot carry them."""
DONE = "Done."


def loop_ready(transcript: Transcript) -> Transcript:
    """``transcript`` in a form both the real loop and contextlab replay alike: a schema for every tool
    it calls when it recorded none (Claude Code logs), and replies and tool outputs recorded as text
    parts joined into one text (a provider streams a reply's text as a string; a tool registry refuses
    a list), without the log's display keys."""
    tools = list(transcript.tools)
    if not tools:
        names = sorted({call["function"]["name"] for m in transcript.messages for call in m.get("tool_calls") or []})
        parameters = {"type": "object", "properties": {}}
        tools = [
            {
                "type": "function",
                "function": {"name": n, "description": f"The recorded {n} tool.", "parameters": parameters},
            }
            for n in names
        ]
    rows = []
    for message in transcript.messages:
        content = message.get("content")
        texts = isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content)
        if message["role"] in ("tool", "assistant") and texts:
            message = {**message, "content": "\n".join(str(p.get("text", "")) for p in content)}
        if not DISPLAY_KEYS.isdisjoint(message):  # the loop's rows never get a recording's display keys
            message = {k: v for k, v in message.items() if k not in DISPLAY_KEYS}
        rows.append(message)
    return Transcript(transcript.transcript_id, rows, transcript.system_prompt, tools)


def loop_shaped(transcript: Transcript) -> Transcript:
    """``transcript`` made to follow the loop's turn shape, so the real loop replays all of it: a
    ``Go on.`` user row after a text reply the recorded turn goes on from (the loop ends its turn on a
    text reply), a ``Done.`` reply between tool results and a user row (the loop asks again after
    results), and consecutive user rows joined into one."""
    rows: list[dict[str, Any]] = []
    for message in transcript.messages:
        last = rows[-1] if rows else None
        # The loop takes one user message per turn: consecutive ones (a Claude Code log's command
        # echoes) become one, joined as the host's repair joins them.
        texts = last is not None and isinstance(last.get("content"), str) and isinstance(message.get("content"), str)
        if message["role"] == "user" and last and last["role"] == "user" and texts:
            rows[-1] = {**last, "content": f"{last['content']}\n\n{message['content']}"}
            continue
        if message["role"] == "assistant" and last and last["role"] == "assistant" and not last.get("tool_calls"):
            rows.append({"role": "user", "content": GO_ON})
        if message["role"] == "user" and last and last["role"] == "tool":
            rows.append({"role": "assistant", "content": DONE})
        rows.append(message)
    if rows and rows[-1]["role"] == "tool":
        rows.append({"role": "assistant", "content": DONE})
    return Transcript(f"{transcript.transcript_id}-loop", rows, transcript.system_prompt, list(transcript.tools))


def provider(
    replies: deque[dict[str, Any]], window: int, sent: list[dict[str, Any]], compactions: list[int], agent: list[Any]
) -> ThreadingHTTPServer:
    """A local chat-completions server answering with ``replies`` in order (streamed when asked),
    reporting each request's exact token count as its usage and noting the agent's compaction count
    (``agent[0]`` once built) when each request arrived."""
    counter = ExactCounter()

    class Provider(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, body: str, kind: str = "application/json", code: int = 200) -> None:
            raw = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            models = [{"id": "gpt-4o", "object": "model", "context_length": window}]
            self._reply(json.dumps({"object": "list", "data": models}))

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if not self.path.endswith("/chat/completions"):
                self._reply("{}", code=404)
                return
            sent.append(body)
            compactions.append(int(getattr(agent[0].context_compressor, "compression_count", 0)) if agent else 0)
            reply = replies.popleft() if replies else {"role": "assistant", "content": "(the recording ended)"}
            message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or None}
            thinking = reply.get("reasoning_content") or reply.get("reasoning")
            if isinstance(thinking, str) and thinking:
                message["reasoning_content"] = thinking  # as a thinking model's provider returns it
            if reply.get("tool_calls"):
                message["tool_calls"] = [dict(call, index=k) for k, call in enumerate(reply["tool_calls"])]
            finish = "tool_calls" if reply.get("tool_calls") else "stop"
            prompt = counter.request(body["messages"], body.get("tools") or [])
            usage = {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}
            head = {"id": "r", "created": 0, "model": "gpt-4o"}
            if not body.get("stream"):
                choice = {"index": 0, "message": message, "finish_reason": finish}
                self._reply(json.dumps({**head, "object": "chat.completion", "choices": [choice], "usage": usage}))
                return
            # As providers stream: the text first, then one chunk per call (its index, id and name in it).
            deltas = [{"role": "assistant", "content": message["content"]}]
            if "reasoning_content" in message:  # streamed ahead of the text, as providers do
                deltas.insert(0, {"role": "assistant", "reasoning_content": message["reasoning_content"]})
            deltas += [{"tool_calls": [call]} for call in message.get("tool_calls") or []]
            chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
            chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage})
            events = "".join(
                f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks
            )
            self._reply(events + "data: [DONE]\n\n", kind="text/event-stream")

    return ThreadingHTTPServer(("127.0.0.1", 0), Provider)


def register_recorded_tools(transcript: Transcript) -> None:
    """The recording's tools in the host's registry, each answering with its recorded outputs: the
    output of the call being run (the host binds its id for approval hooks; it runs read-only calls
    concurrently, so two reads of one file may run in either order), else the next output recorded
    for the same name and arguments."""
    from tools import approval
    from tools.registry import registry

    answers = {m.get("tool_call_id"): m.get("content") for m in transcript.messages if m["role"] == "tool"}
    outputs: defaultdict[tuple[str, str], deque[Any]] = defaultdict(deque)
    for message in transcript.messages:
        for call in message.get("tool_calls") or []:
            arguments = json.dumps(json.loads(call["function"]["arguments"] or "{}"), sort_keys=True)
            outputs[(call["function"]["name"], arguments)].append(answers.get(call["id"], ""))
    for tool in transcript.tools:
        name = tool["function"]["name"]

        def handler(args: dict[str, Any], _name: str = name, **_kwargs: Any) -> Any:
            queue = outputs.get((_name, json.dumps(args, sort_keys=True)))
            call_id = approval._approval_tool_call_id.get()
            if call_id in answers:
                if queue and answers[call_id] in queue:
                    queue.remove(answers[call_id])
                return answers[call_id]
            return queue.popleft() if queue else ""

        registry.register(name=name, toolset="replay", schema=tool["function"], handler=handler, override=True)


def main() -> None:
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-home-")
    transcript = load_transcript(sys.argv[1])
    window = int(sys.argv[2])
    sent: list[dict[str, Any]] = []
    compactions: list[int] = []
    built: list[Any] = []
    server = provider(
        deque(m for m in transcript.messages if m["role"] == "assistant"), window, sent, compactions, built
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    register_recorded_tools(transcript)
    import agent.agent_init as agent_init
    from hermes_state import SessionDB
    from run_agent import AIAgent

    from contextlab.engines.hermes_compressor import hermes_compressor_class

    real_compressor = hermes_compressor_class()

    class OfflineCompressor(real_compressor):  # type: ignore[misc,valid-type]
        """The host's built-in compressor, built with the host's own arguments, summaries offline."""

        def __init__(self, model: str, **kwargs: Any) -> None:
            size = kwargs.pop("config_context_length", None) or window
            real_compressor.__init__(self, model=model, context_length=size, **kwargs)

    agent_init.ContextCompressor = OfflineCompressor
    agent = AIAgent(
        base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
        api_key="unused",
        model="gpt-4o",
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        enabled_toolsets=["replay"],
        max_iterations=200,
        tool_delay=0,
        session_db=SessionDB(db_path=Path(os.environ["HERMES_HOME"]) / "state.db"),
    )
    built.append(agent)
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    history = None
    for message in transcript.messages:
        if limit is not None and len(sent) >= limit:
            break
        if message["role"] == "user":
            done = agent.run_conversation(
                message["content"], system_message=transcript.system_prompt, conversation_history=history
            )
            history = done.get("messages")
    found = {
        "requests": sent[:limit],
        "compactions": compactions[:limit],
        "window": agent.context_compressor.context_length,
    }
    print(json.dumps(found))


if __name__ == "__main__":
    main()
