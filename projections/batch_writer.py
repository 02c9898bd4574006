"""Batches written in order on a thread of their own while the caller prepares the next one.

The database's share of a batch (SQLite's page writes, PostgreSQL's parsing of the JSON and its
index updates, each commit) then overlaps the decoding and folding of the next batch. At most
one batch is in flight: it is waited for before the next is handed over, so batches commit in
order and the first error stops the pass. A pass of a single batch is written on the caller's
thread (no thread is started for the small catch-ups of a live runner), and so is every batch
when the database works in this process (SQLite: its work holds the interpreter's lock for the
most part, and two threads taking turns cost more than they overlap).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")


class BatchWriter(Generic[T]):
    """`write(batch)` each submitted batch in order; `done(batch)` on the caller's thread after
    each write has returned (in order, before the next `submit` returns)."""

    def __init__(
        self, write: Callable[[T], None], done: Callable[[T], None], *, threaded: bool = True
    ) -> None:
        self._write = write
        self._done = done
        self._threaded = threaded  # False: every batch is written on the caller's thread
        self._pool: ThreadPoolExecutor | None = None
        self._future: Future[None] | None = None
        self.in_flight: T | None = None  # submitted, not yet known to be written

    def submit(self, batch: T, *, last: bool) -> None:
        """Hand `batch` over once the batch before it is written (re-raising its error);
        `last` says no batch follows, so a lone one is written at once on this thread."""
        self.wait()
        if not self._threaded or (last and self._pool is None):
            self._write(batch)
            self._done(batch)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="planledger-views")
        self._future = self._pool.submit(self._write, batch)
        self.in_flight = batch

    def wait(self) -> None:
        """Return once the batch in flight (if any) is written; re-raise its error."""
        future, batch = self._future, self.in_flight
        if future is None or batch is None:
            return
        self._future, self.in_flight = None, None
        future.result()
        self._done(batch)

    def __enter__(self) -> BatchWriter[T]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if error is None:
                self.wait()
            elif self._future is not None and self.in_flight is not None:
                # Leave nothing writing behind the caller's back; the caller's error wins.
                written = self._future.exception() is None
                if written:
                    with contextlib.suppress(Exception):
                        self._done(self.in_flight)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
