"""The messages between a caller and a warm process: JSON lines over a UNIX socket.

The request is one line, sent with the caller's standard input, output and error descriptors
attached (SCM_RIGHTS); the warm process answers `{"accepted": true}` when it starts the
command (before that, nothing was done: the caller may run it itself), then `{"code": N}`
when the command ended, or a status for the `status` and `stop` operations.
"""

from __future__ import annotations

import json
import socket
from typing import Any

MAX_REQUEST_BYTES = 4 * 1024 * 1024  # arguments and environment: far below this
STANDARD_FDS = 3


def send_request(connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    data = json.dumps(request).encode() + b"\n"
    sent = socket.send_fds(connection, [data], fds) if fds else connection.send(data)
    if sent < len(data):  # (an empty send to a peer that has answered and left would fail)
        connection.sendall(data[sent:])


def receive_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request and the descriptors that came with it; ValueError when it is not one."""
    data, fds, _, _ = socket.recv_fds(connection, 65536, STANDARD_FDS)
    chunks = [data]
    size = len(data)
    while data and not chunks[-1].endswith(b"\n"):
        data = connection.recv(65536)
        if not data:
            break
        chunks.append(data)
        size += len(data)
        if size > MAX_REQUEST_BYTES:
            raise ValueError("request too large")
    request = json.loads(b"".join(chunks))
    if not isinstance(request, dict):
        raise ValueError("request is not an object")
    return request, fds


def send_line(connection: socket.socket, message: dict[str, Any]) -> None:
    connection.sendall(json.dumps(message).encode() + b"\n")


class Lines:
    """The answer lines of one connection, read as they come."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffer = b""

    def next(self) -> dict[str, Any] | None:
        """The next message; None at the end of the connection (or a broken line)."""
        while b"\n" not in self.buffer:
            chunk = self.connection.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None
