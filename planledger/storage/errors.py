"""Which failures mean "storage unavailable" (retry later): an unreachable or restarted
database, a lost connection, a lock held past its timeout, a full disk."""

from __future__ import annotations

import errno
import functools
import sqlite3
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from domain.errors import LedgerError, ReadOnlyStore, StorageUnavailable
from planledger.storage.settings import DatabaseSettings, postgres_conninfo

P = ParamSpec("P")
R = TypeVar("R")
HEAL_SECONDS = 2.0  # a connection error is retried this long, then "storage unavailable"

UNAVAILABLE_SQLITE = ("database is locked", "unable to open", "disk i/o error", "disk is full")


def unavailable_cause(error: BaseException) -> str | None:
    """One line naming the cause when `error` means the storage cannot be used now."""
    from eventsourcing.persistence import InterfaceError, OperationalError

    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
    if isinstance(error, OperationalError | InterfaceError):
        return first
    if isinstance(error, sqlite3.OperationalError):
        return first if first.lower().startswith(UNAVAILABLE_SQLITE) else None
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return first
    module = type(error).__module__
    if module.startswith(("psycopg", "psycopg_pool")):
        name = type(error).__name__
        if name in ("OperationalError", "InterfaceError", "PoolTimeout", "PoolClosed"):
            return first
    return None


# PostgreSQL's insufficient_privilege and read_only_sql_transaction (a hot standby).
READ_ONLY_SQLSTATES = ("42501", "25006")


def may_not_write(error: BaseException) -> bool:
    """Whether `error` (or an error it was raised from) says this connection may read but not
    write (a read-only role, a standby server, a read-only SQLite file)."""
    seen: BaseException | None = error
    while seen is not None:
        if getattr(seen, "sqlstate", None) in READ_ONLY_SQLSTATES:
            return True
        if isinstance(seen, sqlite3.OperationalError) and "readonly database" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def probe_cause(settings: DatabaseSettings) -> str | None:
    """Why a PostgreSQL database cannot be reached, from one direct connection attempt (a
    connection pool only says that it timed out)."""
    if not settings.is_postgres:
        return None
    import psycopg

    try:
        psycopg.connect(postgres_conninfo(settings)).close()
    except psycopg.Error as error:
        return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
    return None


def lost_connection(error: BaseException) -> bool:
    """A connection that broke or could not be made (worth retrying), as opposed to a lock
    already waited out (SQLite's busy timeout) or a full disk."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, sqlite3.Error | OSError):
            return False
        seen = seen.__cause__ or seen.__context__
    return True


def heals(method: Callable[P, R]) -> Callable[P, R]:
    """Retry `method` with backoff while the storage is unavailable (a lost connection, a
    restarting database), for connection errors only, never a conflict; after HEAL_SECONDS,
    StorageUnavailable naming the cause. Only for methods that are safe to run again (every
    proposal id is chosen before, so a retry after an unacknowledged commit finds it)."""

    @functools.wraps(method)
    def retrying(*args: P.args, **kwargs: P.kwargs) -> R:
        deadline = time.monotonic() + HEAL_SECONDS
        delay = 0.05
        while True:
            try:
                return method(*args, **kwargs)
            except LedgerError:
                raise
            except Exception as error:
                if may_not_write(error):
                    raise ReadOnlyStore(
                        "this database connection may only read (a read-only role, a standby "
                        "server or a read-only file): nothing was recorded"
                    ) from error
                cause = unavailable_cause(error)
                if cause is None:
                    raise
                if not lost_connection(error) or time.monotonic() + delay > deadline:
                    raise StorageUnavailable(f"storage unavailable: {cause}") from error
                time.sleep(delay)
                delay = min(delay * 2, 0.4)

    return retrying
