"""Half-open connections (a slowloris): clients that connect and send part of a request head,
then nothing. The server closes each after its head deadline (PLANLEDGER_HEADER_TIMEOUT, short
here), never lets them take every socket it may open, and answers legitimate requests all the
while. The server runs with a low open-files limit, as a small container has, so that a few
hundred connections would exhaust it."""

from __future__ import annotations

import resource
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_server import Server, stop
from tests.faults.support import healthy_within, spawn_server, wait_until

pytestmark = pytest.mark.faults

OPEN_FILES = 256  # the server's soft limit
HALF_OPEN = 300  # more connections than that limit allows
HEAD_TIMEOUT = "1"  # seconds, through the server's configuration
PARTIAL_HEAD = b"GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def low_open_files_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(OPEN_FILES, hard), hard))


@contextmanager
def limited_server(database: str, home: Path) -> Iterator[Server]:
    server = spawn_server(
        database,
        home,
        env={"PLANLEDGER_HEADER_TIMEOUT": HEAD_TIMEOUT},
        preexec_fn=low_open_files_limit,
    )
    try:
        problem = healthy_within(server)
        assert problem is None, problem
        yield server
    finally:
        stop(server.process)


def half_open(port: int, head: bytes = PARTIAL_HEAD) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(head)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset


def test_half_open_connections_are_closed_and_never_starve_the_server(
    sqlite_url: str, tmp_path: Path
) -> None:
    with limited_server(sqlite_url, tmp_path / "home") as server, ExitStack() as stack:
        port = int(server.url.rsplit(":", 1)[1])
        # One connection kept alive after a whole request, then left with half a head.
        kept = stack.enter_context(half_open(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
        assert kept.recv(65536).startswith(b"HTTP/1.1 200"), "the first request failed"
        kept.sendall(PARTIAL_HEAD)
        attack = [stack.enter_context(half_open(port)) for _ in range(HALF_OPEN)]

        with server.client() as api:  # legitimate requests are answered meanwhile
            assert api.get("/healthz").status_code == 200
            assert api.post("/sessions", json={"session_id": "s1"}).status_code == 201
            assert api.get("/sessions/s1").status_code == 200

        def all_closed() -> bool | None:
            still_open = [s for s in [kept, *attack] if not closed_by_server(s)]
            return True if not still_open else None

        wait_until(all_closed, 30.0, "the server closes every half-open connection")
        response = httpx.get(f"{server.url}/healthz", timeout=10.0)
        assert response.status_code == 200
    output = server.output()
    assert "Traceback" not in output, output[-3000:]
