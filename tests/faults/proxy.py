"""A TCP proxy in front of the shared PostgreSQL server, so a test can take "the database" away
from the processes it started (and only from them) and give it back, without touching the real
server that other tests use."""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit, urlunsplit

from tests.conftest import POSTGRES_URL

LINGER_RESET = struct.pack("ii", 1, 0)  # close with a RST, as a crashed server's host does


class PostgresProxy:
    """Relays 127.0.0.1:`port` to the real server while up; while down, every relayed
    connection is reset and every new one is reset as soon as it is accepted (a database that
    went away: libpq's connect fails at once, a query on an open connection fails at once)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self._generation = 0  # odd while down; a relay ends when it changes
        self._relays: set[threading.Thread] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def up(self) -> bool:
        return self._generation % 2 == 0

    def url(self, database_url: str) -> str:
        """`database_url` with its host and port replaced by this proxy's."""
        parts = urlsplit(database_url)
        auth = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{auth}@127.0.0.1:{self.port}"))

    def go_down(self) -> None:
        """Reset every relayed connection (returns once they are) and every later one."""
        with self._lock:
            if self.up:
                self._generation += 1
            relays = list(self._relays)
        for relay in relays:
            relay.join(timeout=5)

    def come_back(self) -> None:
        with self._lock:
            if not self.up:
                self._generation += 1

    def close(self) -> None:
        self.go_down()
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            if not self.up:
                reset(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                reset(client)
                continue
            relay = threading.Thread(
                target=self._relay, args=(client, server, self._generation), daemon=True
            )
            with self._lock:
                self._relays.add(relay)
            relay.start()

    def _relay(self, client: socket.socket, server: socket.socket, generation: int) -> None:
        peer = {client: server, server: client}
        with selectors.DefaultSelector() as selector:
            for sock in peer:
                selector.register(sock, selectors.EVENT_READ)
            with suppress(OSError):
                while self._generation == generation:
                    for key, _ in selector.select(timeout=0.05):
                        sock = key.fileobj
                        assert isinstance(sock, socket.socket)
                        data = sock.recv(65536)
                        if not data:
                            raise ConnectionResetError
                        peer[sock].sendall(data)
        for sock in peer:
            reset(sock)
        with self._lock:
            self._relays.discard(threading.current_thread())


def reset(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
    with suppress(OSError):
        sock.close()


@contextmanager
def postgres_proxy() -> Iterator[PostgresProxy]:
    parts = urlsplit(POSTGRES_URL)
    proxy = PostgresProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    try:
        yield proxy
    finally:
        proxy.close()
