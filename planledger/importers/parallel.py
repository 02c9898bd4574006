"""A bulk import's work spread over the machine's cores: shares run at once, the first here and
each other one in a process forked from this one (which shares what this one has read: nothing
is sent to it but its share's number, and only its result comes back).

The children are projections.forked's workers: a child that records opens its own connections.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import TypeVar

from domain.errors import ErrorKind, LedgerError
from planledger.storage.settings import DatabaseSettings
from projections.forked import ForkedWorkers, WorkerFailed, can_fork, cores

T = TypeVar("T")
MAX_SHARES = 4  # processes of one import, at most


class ShareFailed(LedgerError):
    """A process of the import died before it said how its share went."""

    kind = ErrorKind.UNAVAILABLE
    code = "import_worker_failed"


def shares_wanted(database: DatabaseSettings | None = None) -> int:
    """How many shares an import runs at once here: one more than the cores (a writer waits
    for the disk and for the others' transactions part of its time), up to MAX_SHARES; one
    on a single core, where this system cannot fork, or for an in-memory SQLite database
    (only this process has it)."""
    if not can_fork() or cores() < 2:
        return 1
    if database is not None and database.env.get("SQLITE_DBNAME", "").startswith(":memory:"):
        return 1
    return min(cores() + 1, MAX_SHARES)


def in_shares(work: Callable[[int], T], count: int) -> list[T]:
    """[work(0), ..., work(count - 1)]: work(0) here, each other one in a forked child, all at
    once. An error of a child is raised here (after this process's own share), as its own type
    where it can be rebuilt, else as ShareFailed; an error here stops the children."""
    if count <= 1:
        return [work(0)]
    for stream in (sys.stdout, sys.stderr):  # what they hold would be written again by a child
        with contextlib.suppress(Exception):
            stream.flush()
    children = ForkedWorkers(count - 1, lambda: None, lambda _, index: work(index))
    try:
        children.send(range(1, count))
        here = work(0)
        try:
            return [here, *children.receive()]
        except WorkerFailed as failed:
            raise failed.error or ShareFailed(f"an import process failed: {failed}") from None
    finally:
        children.close()
