"""The recorder contract's two reads on PostgreSQL, each tried once.

The library's PostgreSQL recorders retry `select_events` and `select_notifications` 10 times,
0.2 s apart, on a lost server (`@retry((InterfaceError, OperationalError), max_attempts=10,
wait=0.2)` in eventsourcing/postgres.py, with no setting to change it), each attempt waiting
for the pool too, where the ledger answers "storage unavailable" within about 3 s (the
service's `heals` retries within that bound). So both recorders (postgres_recorder's and
postgres_factory's snapshot store's) answer these reads with this SQL of ours instead: the
library's statements and rows (`SELECT ... WHERE originator_id = %s [AND originator_version >
%s] [AND originator_version <= %s] ORDER BY originator_version ASC|DESC [LIMIT %s]`, and the
notifications' `notification_id >= / > start`, `<= stop`, `topic = ANY(topics)`, `LIMIT`), on
the datastore's `get_connection()` (which turns psycopg's errors into the library's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import Notification, StoredEvent
from eventsourcing.postgres import PostgresDatastore
from psycopg import sql

EVENT_COLUMNS = "originator_id, originator_version, topic, state"


class OnceReads:
    """`select_events` and `select_notifications` of one events table, each statement shape
    composed once (psycopg would compose it on every call)."""

    def __init__(self, datastore: PostgresDatastore, events_table_name: str) -> None:
        self.datastore = datastore
        self.table = sql.Identifier(datastore.schema, events_table_name)
        self.statements: dict[tuple[Any, ...], sql.Composed] = {}

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        shape = ("events", gt is not None, lte is not None, desc, limit is not None)
        statement = self.statements.get(shape)
        if statement is None:
            text = f"SELECT {EVENT_COLUMNS} FROM {{0}} WHERE originator_id = %s"
            if gt is not None:
                text += " AND originator_version > %s"
            if lte is not None:
                text += " AND originator_version <= %s"
            text += " ORDER BY originator_version " + ("DESC" if desc else "ASC")
            if limit is not None:
                text += " LIMIT %s"
            statement = self.statements[shape] = sql.SQL(text).format(self.table)
        params = [originator_id, *(v for v in (gt, lte, limit) if v is not None)]
        return [
            StoredEvent(originator_id=o, originator_version=v, topic=t, state=bytes(s))
            for o, v, t, s in self.rows(statement, params)
        ]

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> list[Notification]:
        if topics:  # the library's checks: a sequence of strings
            assert isinstance(topics, tuple | list), topics
            assert all(isinstance(t, str) for t in topics), topics
        shape = ("notifications", start is not None, inclusive_of_start, stop is not None)
        statement = self.statements.get((*shape, bool(topics)))
        if statement is None:
            where = []
            if start is not None:
                where.append(
                    "notification_id >= %s" if inclusive_of_start else "notification_id > %s"
                )
            if stop is not None:
                where.append("notification_id <= %s")
            if topics:
                where.append("topic = ANY(%s)")
            text = f"SELECT notification_id, {EVENT_COLUMNS} FROM {{0}}"
            if where:
                text += " WHERE " + " AND ".join(where)
            text += " ORDER BY notification_id LIMIT %s"
            statement = self.statements[(*shape, bool(topics))] = sql.SQL(text).format(self.table)
        params: list[Any] = [v for v in (start, stop) if v is not None]
        if topics:
            params.append(list(topics))
        params.append(limit)
        return [
            Notification(id=n, originator_id=o, originator_version=v, topic=t, state=bytes(s))
            for n, o, v, t, s in self.rows(statement, params)
        ]

    def rows(self, statement: sql.Composed, params: list[Any]) -> list[tuple[Any, ...]]:
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(row_factory=psycopg.rows.tuple_row) as cursor,
        ):
            return cursor.execute(statement, params, prepare=True).fetchall()


class EventsReadOnce:
    """Mixed in before a library recorder: its `select_events` answered by `reads`."""

    reads: OnceReads

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        return self.reads.select_events(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
