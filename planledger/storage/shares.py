"""The events of a rebuild's batch as forked workers read them: each worker one share of the
sessions, on its own connection, so that the events never pass through the parent process.

A session's share is a function of the last two characters of its id, which its plan stream
(`plan:<id>`) and its session stream (`session:<id>`) share: every event of a session is in one
share, and the ids agents use (UUIDs, numbered names) spread evenly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

SQLITE_SHARE = (
    "(unicode(substr(originator_id, -1)) + 31 * unicode(substr(originator_id, -2, 1))) % ?"
)
POSTGRES_SHARE = (
    "mod(ascii(right(originator_id, 1)) + 31 * ascii(left(right(originator_id, 2), 1)), %s)"
)


class SqliteShares:
    """A share reader of a SQLite store (see projections.runner.ShareReader)."""

    def __init__(self, path: str, timeout: float, count: int, topics: Collection[str]) -> None:
        self.path, self.timeout = path, timeout
        self.count, self.topics = count, sorted(topics)
        self.conn: sqlite3.Connection | None = None  # made in the worker
        marks = ", ".join("?" * len(self.topics))
        self.sql = (
            "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events "
            "WHERE rowid > ? AND rowid <= ? AND (substr(originator_id, 1, 5) = 'plan:' "
            f"OR topic IN ({marks})) AND {SQLITE_SHARE} = ? ORDER BY rowid"
        )

    def read(self, after: int, upto: int, share: int) -> list[tuple[Any, ...]]:
        if self.conn is None:
            self.conn = sqlite3.connect(self.path, timeout=self.timeout)
        params = (after, upto, *self.topics, self.count, share)
        return self.conn.execute(self.sql, params).fetchall()


class PostgresShares:
    """A share reader of a PostgreSQL store. Rows up to a batch's bounds are all committed
    (the bounds were read after every transaction still inserting had ended, and later inserts
    take later ids): no lock is needed."""

    def __init__(
        self, conninfo: str, events_table: str, count: int, topics: Collection[str]
    ) -> None:
        self.conninfo, self.count, self.topics = conninfo, count, sorted(topics)
        self.conn: psycopg.Connection[Any] | None = None  # made in the worker
        self.sql = (
            "SELECT notification_id, originator_id, originator_version, topic, state "
            f"FROM {events_table} WHERE notification_id > %s AND notification_id <= %s AND "
            "(left(originator_id, 5) = 'plan:' OR topic = ANY(%s)) AND "
            f"{POSTGRES_SHARE} = %s ORDER BY notification_id"
        )

    def read(self, after: int, upto: int, share: int) -> list[tuple[Any, ...]]:
        if self.conn is None:
            import psycopg  # as planledger.storage.views: only where PostgreSQL is used

            self.conn = psycopg.connect(self.conninfo, autocommit=True)
        params = (after, upto, self.topics, self.count, share)
        return self.conn.cursor(binary=True).execute(self.sql, params).fetchall()
