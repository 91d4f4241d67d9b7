"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the LLM summarizer tests.

It answers ``POST .../chat/completions`` following a script of behaviours: a normal answer, an
HTTP error status with a JSON error body, a hang, an undecodable body, or a connection closed
mid-response. Every request body is recorded.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: deque[tuple[Any, ...]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.default_text = "## Goal\n- stub summary"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: StubServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        action = self.server.script.popleft() if self.server.script else ("ok", self.server.default_text)
        kind = action[0]
        if kind == "hang":
            self.server.release.wait(action[1])
            kind, action = "ok", ("ok", self.server.default_text)
        if kind == "ok":
            self._json(
                200,
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": action[1]},
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )
        elif kind == "status":
            self._json(action[1], {"error": action[2]})
        elif kind == "badjson":
            raw = b"{this is not json"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        elif kind == "close":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "5000")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-stub", "choi')
            self.wfile.flush()
            self.close_connection = True
        else:  # pragma: no cover - a broken test script
            raise AssertionError(f"unknown stub action {action!r}")


def start() -> tuple[StubServer, threading.Thread]:
    server = StubServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


def stop(server: StubServer, thread: threading.Thread) -> None:
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
