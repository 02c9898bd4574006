"""Wake-ups for a PostgreSQL store's follower, sent off the writers' path.

After a commit a writer used to send `NOTIFY` itself: a round trip on every commit's path
(about 0.09 ms of a 1 ms commit here), and one wake-up of the store's follower per commit,
although the follower catches up at most once per CHECK_INTERVAL. Now a writer only marks a
commit due; a thread of its process sends one NOTIFY for every commit marked since its last
one, then waits NOTIFY_GAP before it sends again. A commit after a quiet spell is notified at
once; a burst of commits costs one NOTIFY per NOTIFY_GAP per process. Each NOTIFY is sent
after the commits it stands for, so a follower woken by it sees them.

Closing sends what is due before the connections close. A process killed before its thread
sent one loses that wake-up: the leader looks at the store at least every IDLE_CHECK seconds
(planledger.service.follower), so the views' position still follows.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

NOTIFY_GAP = 0.02  # seconds between one process's NOTIFYs (the leader waits 0.05 anyway)


class CommitNotifier:
    """Calls `send` (a NOTIFY) after commits, at most once per `gap` seconds, from a thread."""

    def __init__(self, send: Callable[[], None], gap: float = NOTIFY_GAP) -> None:
        self._send = send
        self._gap = gap
        self._due = threading.Event()  # a commit not notified yet
        self._lock = threading.Lock()
        self._closed = False
        self._thread_pid: int | None = None  # the process whose thread sends (none after fork)

    def committed(self) -> None:
        """Mark a commit that followers must hear of."""
        self._due.set()
        if self._thread_pid != os.getpid():
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread_pid == os.getpid() or self._closed:
                return
            self._thread_pid = os.getpid()
            threading.Thread(target=self._run, name="notify", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._due.wait()
            if self._closed:
                return
            self._due.clear()
            self._send_quietly()
            time.sleep(self._gap)

    def _send_quietly(self) -> None:
        # A lost wake-up delays the followers by at most the leader's IDLE_CHECK; an error
        # here (the database gone) is the commit path's to report, not this thread's.
        with contextlib.suppress(Exception):
            self._send()

    def close(self) -> None:
        """Send what is due now; no thread sends after this."""
        self._closed = True
        if self._due.is_set():
            self._due.clear()
            self._send_quietly()
        self._due.set()  # the thread, if waiting, ends
