"""The PostgreSQL write path: the library's EXCLUSIVE table lock (insert order is commit order)
and notification (it wakes followers), but BEGIN, the lock, one INSERT-with-views statement
(which also notifies) and COMMIT go to the server in one pipeline sync. The library's stock
path syncs three times, sends rows as a text-encoded array and runs two more statements (SET
LOCAL lock_timeout, to its default of no timeout, and NOTIFY): bench/commit_rate.py, variant c
against c_stock. A duplicate (originator_id, originator_version) still raises the library's
IntegrityError.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import sql

from planledger.storage.recorder import InlineViews
from planledger.storage.scan import ChainedEvent
from planledger.storage.schema import VIEWS
from planledger.storage.view_rows import SESSION_COLUMNS, ViewRows, columns, rows_of


class OneTripPostgresRecorder(PostgresApplicationRecorder):
    # Each read tried once: the service's `heals` retries within its bound (postgres_factory).
    select_events = inspect.unwrap(PostgresApplicationRecorder.select_events)
    select_notifications = inspect.unwrap(PostgresApplicationRecorder.select_notifications)

    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        *,
        views: InlineViews | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        states = {(str(e.originator_id), e.originator_version): e.state for e in stored_events}
        rows = (
            rows_of(views.changes, lambda *key: (None, states.get(key)))
            if views is not None
            else ViewRows()
        )
        tables = [
            [(e.originator_id, e.originator_version, e.topic, e.state) for e in stored_events]
        ]
        if views is not None:
            # views (session_id, version, position, revision, view); history (session_id,
            # position, _, kind, revision, entry, view, digest); sessions as they are
            tables.append([(r[0], r[1], r[3], r[4]) for r in rows.views])
            tables.append([(r[0], r[1], *r[3:]) for r in rows.history])
            tables.append(list(rows.sessions))
        shape = tuple(len(table) for table in tables)
        params: list[Any] = []
        if sum(shape) > ARRAYS_FROM:
            shape = (ARRAYS,) * len(tables)  # one statement for every size of large write
            for table, kinds in zip(tables, TYPES, strict=False):
                params += columns(table, len(kinds))
        else:
            for table in tables:
                params += [value for row in table for value in row]
        error: Exception | None = None
        result: list[tuple[int, int]] = []
        with self.datastore.get_connection() as conn:
            preamble, insert = self._statements(conn, shape)
            with conn.cursor() as head, conn.cursor(row_factory=psycopg.rows.tuple_row) as cur:
                try:
                    # Leaving the pipeline block sends the one sync and reads every result.
                    with conn.pipeline():
                        for statement in preamble:
                            head.execute(statement, prepare=True)
                        cur.execute(insert, params, prepare=True)
                        head.execute(b"COMMIT", prepare=True)
                    result = cur.fetchall()
                except Exception as caught:  # re-raised below, after the pipeline closed
                    error = caught
            if error is not None:
                if not conn.broken and (
                    conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                ):
                    conn.rollback()
                raise error  # get_connection() turns psycopg errors into the library's
        if views is not None:
            views.applied = bool(result) and bool(result[0][1])
        return [row[0] for row in result]

    def select_chained(self, originator_id: str) -> list[ChainedEvent]:
        """The stream's events in order, each with its chain."""
        table = sql.Identifier(self.datastore.schema, self.events_table_name)
        statement = sql.SQL(
            "SELECT originator_id, originator_version, topic, state, chain FROM {0} "
            "WHERE originator_id = %s ORDER BY originator_version"
        ).format(table)
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(binary=True, row_factory=psycopg.rows.tuple_row) as cursor,
        ):
            rows: list[Any] = cursor.execute(statement, (originator_id,)).fetchall()
        return [ChainedEvent(o, v, t, bytes(s), h) for o, v, t, s, h in rows]

    def _statements(self, conn: Any, shape: tuple[int, ...]) -> tuple[list[bytes], bytes]:
        """BEGIN and lock, and the INSERT-with-views statement for this shape of write,
        rendered once as bytes (psycopg would otherwise compose it on every execute)."""
        cache: dict[tuple[int, ...], tuple[list[bytes], bytes]] = self.__dict__.setdefault(
            "_rendered", {}
        )
        rendered = cache.get(shape)
        if rendered is None:
            lock = sql.SQL("LOCK TABLE {0} IN EXCLUSIVE MODE").format(
                sql.Identifier(self.datastore.schema, self.events_table_name)
            )
            preamble = [b"BEGIN", lock.as_bytes(conn)]
            statement = insert_with_views(
                self.datastore.schema, self.events_table_name, shape, self.channel_name
            ).as_bytes(conn)
            rendered = cache[shape] = (preamble, statement)
        return rendered


# A write of more rows than this sends each table's rows as one array per column, in a
# statement whose text is the same for every size. An import's writes of thousands of rows
# each had a new text: psycopg spent a seventh of the import's CPU parsing their placeholders,
# and the server planned each anew (bench/bulk.py, PostgreSQL: import 22-24 MB/s before, 32
# after). A small write sends a row of values each: arrays cost psycopg more there.
ARRAYS_FROM = 64
ARRAYS = -1  # the count of a table in the shape of a write sent as arrays
# The column types of the events, views, history and sessions rows.
TYPES = (
    ("text", "bigint", "text", "bytea"),
    ("text", "bigint", "bigint", "json"),
    ("text", "bigint", "text", "bigint", "json", "json", "text"),
    ("text", "bigint", "text", "text", "text", "text", "text", "text"),
)


def rows_from(table: int, count: int | None, names: str) -> sql.Composable:
    """The rows of one table as a FROM item named r(`names`): `count` rows of values, or
    (None) one array per column."""
    types = TYPES[table]
    if count is None:
        arrays = ", ".join(f"%b::{kind}[]" for kind in types)
        return sql.SQL(f"unnest({arrays}) AS r({names})")
    row = "(" + ", ".join(f"%b::{kind}" if kind == "bytea" else f"%s::{kind}" for kind in types)
    return sql.SQL(f"(VALUES {', '.join([row + ')'] * count)}) AS r({names})")


def insert_with_views(
    schema: str, events_table: str, shape: tuple[int, ...], channel: str
) -> sql.Composable:
    """One statement: insert the events and notify `channel`; if the views had reached the
    last event before them, upsert the changed views, insert the history rows (store positions
    from the insert), upsert the sessions and move the tracking position. `shape`: how many
    rows of each table are sent (events, then views, history and sessions when the views are
    written), each ARRAYS for a large write sent as arrays. Returns
    (notification_id, views_applied) per event."""
    counts = [None if count == ARRAYS else count for count in shape]
    events = sql.Identifier(schema, events_table)
    # A one-row join: pg_notify runs once per statement (and PostgreSQL sends one notification
    # per channel and transaction, at commit, as NOTIFY would).
    notify = sql.SQL("(SELECT pg_notify({0}, '')) AS notified").format(sql.Literal(channel))
    # Rows are inserted in the order sent: the events get their ids (and chains) in it.
    insert = sql.SQL(
        "INSERT INTO {events} (originator_id, originator_version, topic, state) SELECT * FROM "
        "{rows} "
    ).format(events=events, rows=rows_from(0, counts[0], "o, v, t, s"))
    if len(counts) == 1:  # a plain insert (the library's contract tests use it so)
        return sql.SQL(
            "WITH ins AS ({insert}RETURNING notification_id) "
            "SELECT notification_id, 0 FROM ins, {notify} ORDER BY notification_id"
        ).format(insert=insert, notify=notify)
    parts: list[sql.Composable] = [
        sql.SQL(
            "WITH ins AS ({insert}RETURNING notification_id, originator_id, originator_version), "
            "caught AS (UPDATE {tracking} SET position = (SELECT max(notification_id) FROM ins) "
            "WHERE projection = {views} AND position = "
            "(SELECT COALESCE(max(notification_id), 0) FROM {events}) RETURNING 1)"
        ).format(
            insert=insert,
            events=events,
            tracking=sql.Identifier(schema, "planledger_tracking"),
            views=sql.Literal(VIEWS),
        )
    ]
    if counts[1] != 0:
        parts.append(
            sql.SQL(
                ", v AS (INSERT INTO {table} (session_id, version, position, revision, view) "
                "SELECT r.sid, r.version, (SELECT max(notification_id) FROM ins), r.revision, "
                "r.view FROM {rows} WHERE EXISTS (SELECT 1 FROM caught) "
                "ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, "
                "position = excluded.position, revision = excluded.revision, view = excluded.view)"
            ).format(
                table=sql.Identifier(schema, "planledger_plan_views"),
                rows=rows_from(1, counts[1], "sid, version, revision, view"),
            )
        )
    if counts[2] != 0:
        parts.append(
            sql.SQL(
                ", h AS (INSERT INTO {table} "
                "(session_id, position, notification_id, kind, revision, entry, view, digest) "
                "SELECT r.sid, r.pos, ins.notification_id, r.kind, r.revision, r.entry, r.view, "
                "r.digest FROM {rows} JOIN ins ON ins.originator_id = 'plan:' || r.sid "
                "AND ins.originator_version = r.pos WHERE EXISTS (SELECT 1 FROM caught))"
            ).format(
                table=sql.Identifier(schema, "planledger_plan_history"),
                rows=rows_from(2, counts[2], "sid, pos, kind, revision, entry, view, digest"),
            )
        )
    if counts[3] != 0:
        parts.append(
            sql.SQL(
                ", s AS (INSERT INTO {table} ({columns}) SELECT * FROM {rows} "
                "WHERE EXISTS (SELECT 1 FROM caught) ON CONFLICT (session_id) DO UPDATE SET "
                "version = excluded.version, mode = excluded.mode, "
                "updated_at = excluded.updated_at WHERE {table}.version < excluded.version)"
            ).format(
                table=sql.Identifier(schema, "planledger_sessions"),
                columns=sql.SQL(SESSION_COLUMNS),
                rows=rows_from(
                    3, counts[3], "sid, version, mode, opened_at, updated_at, source, parent, cwd"
                ),
            )
        )
    parts.append(
        sql.SQL(
            " SELECT notification_id, (SELECT count(*) FROM caught) FROM ins, {notify} "
            "ORDER BY notification_id"
        ).format(notify=notify)
    )
    return sql.Composed(parts)
