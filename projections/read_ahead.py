"""Batches of events read one ahead, on a thread of their own, while the caller folds the last.

Reading is mostly waiting (for the database, which does the work), so the next batch arrives
while the one before is decoded and folded. Only events are read here, never views: what a
batch read ahead holds does not depend on the batches before it being written.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor

from eventsourcing.persistence import Notification

Read = Callable[[int, int], list[Notification]]


def read_ahead(
    read: Read, after: int, size: int, *, threaded: bool = True
) -> Generator[list[Notification], None, None]:
    """`read(after, size)`, then the batch after each full one, until one is not full (or
    empty: not yielded). A thread is started only when the first batch is full (and
    `threaded`); the batch being read when the caller stops is waited for."""
    batch = read(after, size)
    while not threaded and len(batch) == size:
        yield batch
        batch = read(batch[-1].id, size)
    if len(batch) < size:
        if batch:
            yield batch
        return
    with ThreadPoolExecutor(1, thread_name_prefix="planledger-read") as pool:
        while batch:
            full = len(batch) == size
            ahead: Future[list[Notification]] | None = (
                pool.submit(read, batch[-1].id, size) if full else None
            )
            yield batch  # (a caller that stops here: leaving the pool waits for the read)
            if ahead is None:
                return
            batch = ahead.result()
