"""The events of a rebuild's batch as forked workers read them: each worker one share of the
sessions, on its own connection, so that the events never pass through the parent process.
A worker reads its sessions' plan events from the first, so it knows each one's previous chain
(its rows leave it NULL: no lookup per row).

A session's share is a function of the last two characters of its id (on PostgreSQL, of its
last two bytes in UTF-8), which its plan stream (`plan:<id>`) and its session stream
(`session:<id>`) share: every event of a session is in one share, and the ids agents use (UUIDs,
numbered names) spread evenly.
"""

from __future__ import annotations

import sqlite3
from operator import itemgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


def event_row_sql(table: str, id_column: str, known: str | None = None) -> str:
    """SELECT ... FROM of the runner's event rows (projections.runner.event_rows): each event
    `e` with its chain and the chain of the event before it in its stream (NULL where the SQL
    test `known` holds: events whose reader has seen every event of their stream before)."""
    before = (
        f"(SELECT p.chain FROM {table} p WHERE p.originator_id = e.originator_id "
        "AND p.originator_version < e.originator_version ORDER BY p.originator_version DESC "
        "LIMIT 1)"
    )
    if known is not None:
        before = f"CASE WHEN {known} THEN NULL ELSE {before} END"
    return (
        f"SELECT e.{id_column}, e.originator_id, e.originator_version, e.topic, e.state, "
        f"e.chain, {before} FROM {table} e"
    )


SQLITE_PLAN = "substr(e.originator_id, 1, 5) = 'plan:'"
# PostgreSQL's byte functions (`textsend`: the text's bytes as they are; a cast to bytea would
# parse backslashes): its text functions count characters, `right` walking the whole id. With
# `right` and `left`, the server took 6.4-6.6 ms to run a worker's read of a batch of 10,000
# events (EXPLAIN ANALYZE); with these, 3.6-4.2 ms.
POSTGRES_PLAN = "starts_with(e.originator_id, 'plan:')"
SQLITE_SHARE = (
    "(unicode(substr(e.originator_id, -1)) + 31 * unicode(substr(e.originator_id, -2, 1))) % ?"
)
POSTGRES_SHARE = (
    "mod(get_byte(textsend(e.originator_id), octet_length(e.originator_id) - 1) "
    "+ 31 * get_byte(textsend(e.originator_id), octet_length(e.originator_id) - 2), %s)"
)


class SqliteShares:
    """A share reader of a SQLite store (see projections.runner.ShareReader)."""

    def __init__(self, path: str, timeout: float, count: int) -> None:
        self.path, self.timeout, self.count = path, timeout, count
        self.conn: sqlite3.Connection | None = None  # made in the worker
        self.sql = (
            f"{event_row_sql('stored_events', 'rowid', SQLITE_PLAN)} WHERE e.rowid > ? "
            f"AND e.rowid <= ? AND {SQLITE_SHARE} = ? ORDER BY e.rowid"
        )

    def connect(self) -> None:
        if self.conn is None:
            self.conn = sqlite3.connect(self.path, timeout=self.timeout)

    def read(self, after: int, upto: int, share: int) -> list[tuple[Any, ...]]:
        self.connect()
        assert self.conn is not None
        return self.conn.execute(self.sql, (after, upto, self.count, share)).fetchall()


class PostgresShares:
    """A share reader of a PostgreSQL store. Rows up to a batch's bounds are all committed
    (the bounds were read below the horizon, planledger.storage.horizon, and later commits
    take higher positions): no lock is needed."""

    def __init__(self, conninfo: str, events_table: str, count: int) -> None:
        self.conninfo, self.count = conninfo, count
        self.conn: psycopg.Connection[Any] | None = None  # made in the worker
        self.sql = (
            f"{event_row_sql(events_table, 'notification_id', POSTGRES_PLAN)} "
            "WHERE e.notification_id > %s AND e.notification_id <= %s "
            f"AND {POSTGRES_SHARE} = %s"
        )

    def connect(self) -> None:
        if self.conn is None:
            import psycopg  # as planledger.storage.views: only where PostgreSQL is used

            self.conn = psycopg.connect(self.conninfo, autocommit=True)

    def read(self, after: int, upto: int, share: int) -> list[tuple[Any, ...]]:
        self.connect()
        assert self.conn is not None
        params = (after, upto, self.count, share)
        rows = self.conn.cursor(binary=True).execute(self.sql, params).fetchall()
        # Put in order here: the server would sort these wide rows on disk (past work_mem),
        # about a quarter of its reading's CPU; ids are unique, so the first item decides.
        rows.sort(key=itemgetter(0))
        return rows
