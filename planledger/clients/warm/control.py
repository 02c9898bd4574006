"""`planledger warm status|stop`: the user's warm processes, found by their sockets."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path
from typing import Any

from planledger.clients.warm.identity import private_folder, socket_folder
from planledger.clients.warm.protocol import Lines, send_request

ASK_SECONDS = 3.0


def ask(path: Path, operation: str) -> dict[str, Any] | None:
    """The answer of the warm process on `path` to `operation`; None when none answers."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(ASK_SECONDS)
    with connection:
        try:
            connection.connect(str(path))
            send_request(connection, {"op": operation}, [])
            connection.shutdown(socket.SHUT_WR)
            return Lines(connection).next()
        except OSError:
            return None


def sockets() -> list[Path]:
    folder = socket_folder()
    if not private_folder(folder):
        return []
    return sorted(folder.glob("*.sock"))


def statuses() -> list[dict[str, Any]]:
    """Every warm process of this user that answers, oldest first."""
    found = [answer for path in sockets() if (answer := ask(path, "status")) is not None]
    return sorted(found, key=lambda status: float(status.get("started", 0)))


def stop_all() -> tuple[list[int], int]:
    """Stop every warm process of this user; returns their process ids and the number of
    sockets left behind by processes that are gone (removed)."""
    stopped: list[int] = []
    removed = 0
    for path in sockets():
        answer = ask(path, "stop")
        if answer is not None and isinstance(answer.get("stopped"), int):
            stopped.append(answer["stopped"])
        elif abandoned(path):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return stopped, removed


def abandoned(path: Path) -> bool:
    """No process holds the lock of `path` (or it has none: an older version's socket)."""
    lock = path.with_suffix(".lock")
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
