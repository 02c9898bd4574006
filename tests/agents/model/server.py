"""A scripted model server on 127.0.0.1: it speaks the dialects the agents use (Anthropic
Messages, Gemini, OpenAI Responses and Chat Completions), hands each
request to the test's script as a Conversation, and keeps every request for the test to read.

The script is a function of the conversation it is sent (not of a call counter), so a resumed or
forked agent, which resends its history, is answered as the script would answer that history."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any

from tests.agents.model import anthropic, chat, gemini, responses
from tests.agents.model.conversation import Conversation, Reply


@dataclass(frozen=True)
class Request:
    """One request the agent sent: its path, body, and the conversation read from it."""

    path: str
    body: dict[str, Any]
    conversation: Conversation
    stream: bool


Script = Callable[[Request], Reply]


@dataclass
class ScriptedModel:
    script: Script
    requests: list[Request] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.reply(200, b"", "text/plain")

            def do_GET(self) -> None:
                model.unknown.append(f"GET {self.path}")
                self.reply(404, b'{"error": "not scripted"}', "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                try:
                    model._answer(self, body)
                except Exception as error:  # the test reads model.errors
                    model.errors.append(f"{self.path}: {error!r}")
                    self.reply(500, json.dumps({"error": repr(error)}).encode(), "text/plain")

            def reply(self, code: int, data: bytes, kind: str) -> None:
                self.send_response(code)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, chunks: Iterator[bytes]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(chunk)
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, handler: Any, body: dict[str, Any]) -> None:
        path = handler.path.split("?")[0]
        if path.endswith("/count_tokens") or path.endswith(":countTokens"):
            data = {"input_tokens": 100, "totalTokens": 100}
            handler.reply(200, json.dumps(data).encode(), "application/json")
            return
        dialect: ModuleType
        if path.endswith("/v1/messages"):
            dialect, stream = anthropic, bool(body.get("stream"))
        elif path.endswith(":streamGenerateContent"):
            dialect, stream = gemini, True
        elif path.endswith(":generateContent"):
            dialect, stream = gemini, False
        elif path.endswith("/responses"):
            dialect, stream = responses, body.get("stream", True) is not False
        elif path.endswith("/chat/completions"):
            dialect, stream = chat, bool(body.get("stream"))
        else:
            self.unknown.append(f"POST {handler.path}")
            handler.reply(404, b'{"error": "not scripted"}', "application/json")
            return
        request = Request(path, body, dialect.read_request(body), stream)
        self.requests.append(request)
        reply = self.script(request)
        turn = len(self.requests)
        model_name = str(body.get("model") or path.rsplit("/", 1)[-1].split(":")[0])
        if stream:
            handler.stream(dialect.reply_events(reply, model_name, turn, body))
        else:
            data = json.dumps(dialect.reply_json(reply, model_name, turn, body)).encode()
            handler.reply(200, data, "application/json")

    def agent_requests(self, tool: str) -> list[Request]:
        """The requests that offered the model `tool` (the agent's main loop, not side calls)."""
        return [r for r in self.requests if tool in r.conversation.tools]
