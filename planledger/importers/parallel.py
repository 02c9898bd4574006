"""A bulk import's work spread over the machine's cores: shares run at once, the first here and
each other one in a process forked from this one (which shares what this one has read: nothing
is sent to it but its share's number, and only its result comes back).

A forked child never touches what it shares with this process beyond reading it (connections
above all: a child that records opens its own); it ends without running this process's exit
handlers.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from domain.errors import ErrorKind, LedgerError
from planledger.storage.settings import DatabaseSettings
from projections.forked import can_fork, cores

if TYPE_CHECKING:  # (multiprocessing is imported where shares are forked: a hook reads
    # transcripts with these importers and forks nothing)
    from multiprocessing.connection import Connection

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
    import multiprocessing

    context = multiprocessing.get_context("fork")
    children: list[tuple[Any, Connection]] = []
    for stream in (sys.stdout, sys.stderr):  # what they hold would be written again by a child
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        for index in range(1, count):
            here, there = context.Pipe(duplex=False)
            child = context.Process(
                target=_run, args=(there, work, index), daemon=True, name="planledger-import"
            )
            child.start()
            there.close()
            children.append((child, here))
        results = [work(0)]
        for child, pipe in children:
            try:
                kind, answer = pipe.recv()
            except (EOFError, OSError):
                raise ShareFailed(f"an import process died (exit code {child.exitcode})") from None
            if kind == "error":
                raise _rebuilt(answer)
            results.append(answer)
        return results
    finally:
        for child, pipe in children:
            pipe.close()
            child.join(0.5)
            if child.is_alive():  # its answer is no longer wanted
                child.terminate()
                child.join()


def _run(pipe: Connection, work: Callable[[int], Any], index: int) -> None:
    """A child's life: its share's work, its answer sent, then an exit that runs nothing of the
    parent's (exit handlers, finalizers, the flush of streams another thread may have held)."""
    gc.freeze()  # what the parent holds is never scanned here (nor copied by the collector)
    gc.disable()  # a share is short-lived: what cycles it leaves go with it
    code = 0
    try:
        try:
            answer: tuple[str, Any] = ("done", work(index))
        except BaseException as error:
            answer = ("error", _portable(error))
        try:
            pipe.send(answer)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            pipe.send(("error", _portable(error)))
    except BaseException:
        code = 1  # the parent finds the pipe closed without an answer
    finally:
        os._exit(code)


def _portable(error: BaseException) -> tuple[type[BaseException], str, dict[str, Any]]:
    """An error as its type, message and attributes (a LedgerError's constructor may take
    other arguments than its message, so it is not pickled as it is)."""
    attributes = dict(vars(error))
    try:
        pickle.dumps((type(error), attributes))
    except Exception:
        return ShareFailed, f"{type(error).__name__}: {error}", {}
    return type(error), str(error), attributes


def _rebuilt(portable: tuple[type[BaseException], str, dict[str, Any]]) -> BaseException:
    kind, message, attributes = portable
    error = kind.__new__(kind)
    error.args = (message,)
    error.__dict__.update(attributes)
    return error
