"""Finding and starting the warm process of this installation from a test."""

from __future__ import annotations

import time
from typing import Any

from planledger.clients.warm import client, control
from planledger.clients.warm.identity import code_key, socket_path

started: list[str] = []  # the keys whose warm process this test session started


def warm_status(key: str | None = None) -> dict[str, Any] | None:
    """The status of the warm process of `key` (this installation's by default); None when
    none answers."""
    key = key or code_key()
    path = socket_path(key)
    for _ in range(3):  # a loaded machine may take its time to fork the answering child
        answer = control.ask(path, "status")
        if answer is not None or not path.exists():
            return answer
    return None


def started_warm_process() -> dict[str, Any]:
    """The warm process of this installation, started if need be (and waited for)."""
    if (status := warm_status()) is not None:
        return status
    client.start(code_key())
    started.append(code_key())
    return wait_for(warm_status, "the warm process did not start")


def wait_for(probe: Any, message: str, seconds: float = 30.0) -> Any:
    """The first truthy result of `probe()`, polled for up to `seconds`."""
    deadline = time.monotonic() + seconds
    while not (found := probe()):
        assert time.monotonic() < deadline, message
        time.sleep(0.05)
    return found
