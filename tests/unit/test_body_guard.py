"""The HTTP body guard (issue 8): a body trickled in too slowly is cut off with a 408 in the
JSON error shape; a body within the limits reaches the application whole."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from planledger.clients.http.guards import BodyLimit

Message = dict[str, Any]


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """Reads the body as an application does, answers with its length."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    payload = json.dumps({"received": len(body)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": payload})


def run_guard(
    chunks: list[bytes], delay: float, *, limit: int = 1000, timeout: float = 0.3
) -> tuple[list[Message], float]:
    """Send `chunks` through the guard, `delay` seconds apart; return the messages sent back."""
    sent: list[Message] = []

    async def receive() -> Message:
        if not chunks:
            await asyncio.sleep(3600)  # like a server waiting for a disconnect
        await asyncio.sleep(delay)
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    started = time.monotonic()
    asyncio.run(BodyLimit(echo, limit=limit, timeout=timeout)(scope, receive, send))
    return sent, time.monotonic() - started


def status_and_body(sent: list[Message]) -> tuple[int, Any]:
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body)


def test_a_trickled_body_is_cut_off_with_408() -> None:
    sent, elapsed = run_guard([b"x"] * 50, delay=0.05, timeout=0.3)
    status, body = status_and_body(sent)
    assert status == 408
    assert body["error"]["code"] == "body_timeout"
    assert body["error"]["message"]
    assert elapsed < 1.0  # cut off at the deadline, not after the 2.5 s the body would take


def test_a_body_within_the_deadline_reaches_the_application_whole() -> None:
    sent, _ = run_guard([b"ab", b"cd", b"e"], delay=0.01, timeout=1.0)
    assert status_and_body(sent) == (200, {"received": 5})


def test_a_streamed_body_over_the_limit_is_413() -> None:
    sent, _ = run_guard([b"x" * 600, b"x" * 600], delay=0.0, limit=1000)
    status, body = status_and_body(sent)
    assert (status, body["error"]["code"]) == (413, "body_too_large")


# -- through a real server and socket ------------------------------------------------------


@pytest.fixture
def slow_server() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(BodyLimit(echo, limit=1000, timeout=0.5), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_slow_client_is_cut_off_by_the_server(slow_server: int) -> None:
    with socket.create_connection(("127.0.0.1", slow_server), timeout=5) as client:
        client.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        started = time.monotonic()
        client.settimeout(0.2)
        answer = b""
        for _ in range(20):  # one byte every 0.2 s: the body would take 20 s
            try:
                client.sendall(b"x")
                answer += client.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if b"body_timeout" in answer:
                break
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"code":"body_timeout"' in answer
    assert elapsed < 3.0
