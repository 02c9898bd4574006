"""How `planledger serve` runs the application: uvicorn, with a deadline for every request head
and a bound on open connections, so that connections which never finish their head (a
slowloris) are closed before any token check can run, and cannot take every socket.

uvicorn has no such deadline (its keep-alive timer runs only between requests and stops at the
first byte), so its HTTP/1.1 protocol is extended here: a connection waiting for a head (a new
one, or a kept-alive one after its response) gets `head_timeout` seconds to complete it, and
once `max_connections` are open, a new connection closes the one that has waited longest for
its head (or, if every open connection is serving a request, is itself closed).
"""

from __future__ import annotations

import asyncio
import os
import resource
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_TIMEOUT_ENV = "PLANLEDGER_HEADER_TIMEOUT"
MAX_CONNECTIONS_ENV = "PLANLEDGER_MAX_CONNECTIONS"
HEAD_TIMEOUT = 10.0  # seconds to send a request line and headers
MAX_CONNECTIONS = 1000
RESERVED_FILES = 64  # descriptors kept for the database, logs and plan.json files
KEEP_ALIVE = 5  # seconds an idle kept-alive connection stays open


class HeadDeadlineProtocol(HttpToolsProtocol):
    head_timeout: ClassVar[float] = HEAD_TIMEOUT
    max_connections: ClassVar[int] = MAX_CONNECTIONS

    head_timer: asyncio.TimerHandle | None = None
    waiting_since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_received()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._head_received()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        next_head_due = not self.pipeline  # a pipelined request's head is already here
        super().on_response_complete()
        if next_head_due and not self.transport.is_closing():
            self._await_head()

    def _await_head(self) -> None:
        self._head_received()
        self.waiting_since = self.loop.time()
        self.head_timer = self.loop.call_later(self.head_timeout, self.transport.close)

    def _head_received(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _make_room(self) -> None:
        """Close the connection that has waited longest for its head (this one if no other)."""
        waiting = [
            other
            for other in self.connections
            if isinstance(other, HeadDeadlineProtocol)
            and other is not self
            and other.head_timer is not None
        ]
        oldest = min(waiting, key=lambda other: other.waiting_since, default=self)
        oldest.transport.close()


def protocol(head_timeout: float, max_connections: int) -> type[HeadDeadlineProtocol]:
    return type(
        "HeadDeadlineProtocol",
        (HeadDeadlineProtocol,),
        {"head_timeout": head_timeout, "max_connections": max_connections},
    )


def setting(name: str, default: float) -> float:
    """A positive number from the environment variable `name`, else `default`."""
    given = os.environ.get(name, "").strip()
    try:
        value = float(given) if given else default
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds or connections: {given!r}")
    return value


def connection_bound() -> int:
    """PLANLEDGER_MAX_CONNECTIONS (default 1000), and never more than the open-files limit
    leaves once the server's own files are counted."""
    wanted = int(setting(MAX_CONNECTIONS_ENV, MAX_CONNECTIONS))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - RESERVED_FILES))


def run_server(application: Any, host: str, port: int) -> None:
    """Serve `application` until interrupted."""
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,  # not shown at this level: its arguments need not be made per request
        timeout_keep_alive=KEEP_ALIVE,
        http=protocol(setting(HEAD_TIMEOUT_ENV, HEAD_TIMEOUT), connection_bound()),
    )
