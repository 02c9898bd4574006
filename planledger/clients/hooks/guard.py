"""Time bounds of a hook: it must get out of the agent's way, never hold it.

- `check_reachable`: a PostgreSQL server that is down is found in milliseconds by one TCP
  connect, instead of after the connection pool's own timeout.
- `Deadline`: past its budget the hook gives up (one line on stderr, exit 0, no answer), before
  the agent's own timeout kills it and reports a failed hook.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import TracebackType

DEADLINE_ENV = "PLANLEDGER_HOOK_DEADLINE"
CONNECT_TIMEOUT = 1.0

# When the call began (time.monotonic()): the process's start, so that a hook's deadline counts
# the interpreter's start-up.
call_started: float | None = None


class DatabaseUnreachable(ConnectionError):
    """No server answers at the database URL's host and port."""


def check_reachable(database: str | None) -> None:
    """Raise DatabaseUnreachable when the PostgreSQL server of `database` refuses or does not
    answer a TCP connection; SQLite needs no check."""
    from planledger.storage.settings import database_settings

    settings = database_settings(database)
    if not settings.is_postgres:
        return
    host, port = settings.env["POSTGRES_HOST"], int(settings.env["POSTGRES_PORT"])
    try:
        import socket  # (PostgreSQL only)

        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise DatabaseUnreachable(
            f"cannot reach the database at {settings.display_url}: {reason}"
        ) from None


def deadline_seconds(default: float) -> float:
    """PLANLEDGER_HOOK_DEADLINE (seconds) when set to a positive number, else `default`."""
    try:
        value = float(os.environ.get(DEADLINE_ENV, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def time_left(seconds: float) -> float:
    """What is left of a deadline of `seconds` once the time the call waited is taken off."""
    if call_started is not None:
        seconds -= time.monotonic() - call_started
    return max(seconds, 0.001)


class Deadline:
    """Calls `give_up` (which must end the process) unless `finish()` comes first."""

    def __init__(self, seconds: float, give_up: Callable[[float], None]) -> None:
        self.seconds = seconds
        self._give_up = give_up
        self._lock = threading.Lock()
        self._finished = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.finish()

    def finish(self) -> None:
        """From here on the hook answers by itself; the deadline no longer applies."""
        with self._lock:
            self._finished = True
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if not self._finished:
                self._give_up(self.seconds)
