"""The PostgreSQL write path, with no table lock: writers of different sessions never wait for
each other. Each event's store position (notification_id) is its transaction's id shifted left
by ID_BITS plus its place in the write, so positions follow the order in which transactions
started writing; readers of the store-wide order only read below the oldest transaction still
in flight (planledger.storage.horizon), so no reader passes a row that commits later. A
session's views are stored with its events when its view is at the event before them (per
session: no store-wide row is written); the projection runner moves the tracking position.
The INSERT-with-views statement is a transaction of its own; the NOTIFY that wakes the store's
follower is sent after it, off the writer's path (planledger.storage.commit_notifier).
A duplicate (originator_id, originator_version) still raises the library's IntegrityError: two
writers of one revision never both commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import Notification, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import sql

from planledger.storage.commit_notifier import CommitNotifier
from planledger.storage.horizon import MAX_EVENTS_PER_WRITE, XACT_BASE
from planledger.storage.known_chains import KnownChains
from planledger.storage.postgres_reads import EventsReadOnce, OnceReads
from planledger.storage.recorder import InlineViews
from planledger.storage.scan import ChainedEvent, chained_stream_sql
from planledger.storage.view_rows import SESSION_COLUMNS, ViewRows, columns, rows_of


class ViewsPostgresRecorder(EventsReadOnce, PostgresApplicationRecorder):
    """The library's PostgreSQL insert with each event's chain (domain.chain) and no table lock,
    plus the views in the same statement when current (the module says how)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The events' chain column, which every insert names (a store made before it gets it
        # from planledger.storage.chain_schema, with the trigger and the chains of old events).
        table = sql.Identifier(self.datastore.schema, self.events_table_name)
        self.sql_create_statements.append(
            sql.SQL("ALTER TABLE {0} ADD COLUMN IF NOT EXISTS chain text").format(table)
        )
        self.known_chains = KnownChains()
        # Each write shape's INSERT-with-views statement, rendered (statements).
        self.rendered: dict[tuple[int, ...], bytes] = {}
        self.notifier = CommitNotifier(self.notify)
        # Each read tried once: the service's `heals` retries within its bound (postgres_reads).
        self.reads = OnceReads(self.datastore, self.events_table_name)

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        return self.reads.select_notifications(
            start, limit, stop, topics, inclusive_of_start=inclusive_of_start
        )

    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        *,
        views: InlineViews | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        if len(stored_events) > MAX_EVENTS_PER_WRITE:
            raise ValueError(f"at most {MAX_EVENTS_PER_WRITE} events in one write")
        states = {(str(e.originator_id), e.originator_version): e.state for e in stored_events}
        rows = (
            rows_of(views.changes, lambda *key: (None, states.get(key)))
            if views is not None
            else ViewRows()
        )
        chains = self.known_chains.chains_of(stored_events)
        tables: list[list[tuple[Any, ...]]] = [
            [
                (e.originator_id, e.originator_version, e.topic, e.state, n, chain)
                for n, (e, chain) in enumerate(zip(stored_events, chains, strict=True))
            ]
        ]
        if views is not None:
            # views (session_id, version before, version, revision, view); history
            # (session_id, position, _, kind, revision, entry, view, digest); sessions as
            # they are
            before = first_versions(stored_events)
            tables.append([(r[0], before[r[0]], r[1], r[3], r[4]) for r in rows.views])
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
        result: list[tuple[int, int, str | None]] = []
        with self.datastore.get_connection() as conn:
            insert = self.statement(conn, shape)
            with conn.cursor(row_factory=psycopg.rows.tuple_row) as cur:
                try:
                    # One statement, so a transaction of its own (the connection commits every
                    # statement): no BEGIN and COMMIT to send.
                    result = cur.execute(insert, params, prepare=True).fetchall()
                except Exception as caught:  # re-raised below, after the cursor closed
                    error = caught
            if error is not None:
                if not conn.broken and (
                    conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                ):
                    conn.rollback()
                raise error  # get_connection() turns psycopg errors into the library's
        self.notifier.committed()
        self.known_chains.stored(stored_events, [row[2] for row in result])
        if views is not None:  # every session's views stored with its events
            views.applied = bool(result) and result[0][1] == len(tables[1])
        return [row[0] for row in result]

    def select_chained(self, originator_id: str) -> list[ChainedEvent]:
        """The stream's events in order, each with its chain."""
        table = sql.Identifier(self.datastore.schema, self.events_table_name)
        statement = sql.SQL(chained_stream_sql("{0}", "notification_id", "%s")).format(table)
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(binary=True, row_factory=psycopg.rows.tuple_row) as cursor,
        ):
            rows: list[Any] = cursor.execute(statement, (originator_id,)).fetchall()
        return [ChainedEvent(o, v, t, bytes(s), h, at) for o, v, t, s, h, at in rows]

    def statement(self, conn: Any, shape: tuple[int, ...]) -> bytes:
        """The INSERT-with-views statement for this shape of write, rendered once as bytes
        (psycopg would otherwise compose it on every execute)."""
        rendered = self.rendered.get(shape)
        if rendered is None:
            statement = insert_with_views(self.datastore.schema, self.events_table_name, shape)
            rendered = self.rendered[shape] = statement.as_bytes(conn)
        return rendered

    def notify(self) -> None:
        """Wake the store's follower, in a transaction of its own: a transaction that
        notifies holds a database-wide lock from its commit's start to its end, WAL flush
        included, so writers that notified in theirs would commit one at a time."""
        with self.datastore.get_connection() as conn:
            conn.execute(sql.SQL("NOTIFY {0}").format(sql.Identifier(self.channel_name)))


# A write of more rows than this sends each table's rows as one array per column, in a
# statement whose text is the same for every size. An import's writes of thousands of rows
# each had a new text: psycopg spent a seventh of the import's CPU parsing their placeholders,
# and the server planned each anew (bench/bulk.py, PostgreSQL: import 22-24 MB/s before, 32
# after). A small write sends a row of values each: arrays cost psycopg more there.
ARRAYS_FROM = 64
ARRAYS = -1  # the count of a table in the shape of a write sent as arrays
# The column types of the events, views, history and sessions rows.
TYPES = (
    ("text", "bigint", "text", "bytea", "bigint", "text"),
    ("text", "bigint", "bigint", "bigint", "json"),
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


def first_versions(stored_events: Sequence[StoredEvent]) -> dict[str, int]:
    """The version before the first of each plan stream's events in a write, by session id
    (its view must be at that version for the write to store the session's views)."""
    before: dict[str, int] = {}
    for event in stored_events:
        originator = str(event.originator_id)
        if originator.startswith("plan:"):
            session_id = originator[5:]
            version = event.originator_version - 1
            before[session_id] = min(before.get(session_id, version), version)
    return before


def insert_with_views(schema: str, events_table: str, shape: tuple[int, ...]) -> sql.Composable:
    """One statement: insert the events (their store positions in their transaction's range,
    planledger.storage.horizon); then, for each session whose view is at the event before its
    first one here (or that is new), upsert its view and insert its history rows (store
    positions from the insert), and upsert the session rows of sessions that have one (or are
    new). `shape`: how many rows of each table are sent (events, then views,
    history and sessions when the views are written), each ARRAYS for a large write sent as
    arrays. Returns (notification_id, sessions whose views were stored, chain) per event."""
    counts = [None if count == ARRAYS else count for count in shape]
    events = sql.Identifier(schema, events_table)
    # Rows are inserted in the order sent: the events get their positions, and their chains
    # (a trigger reads the one before), in it.
    # (A NULL chain is the trigger's to compute, planledger.storage.known_chains.)
    insert = sql.SQL(
        "INSERT INTO {events} "
        "(notification_id, originator_id, originator_version, topic, state, chain) "
        "SELECT {base} + r.n, r.o, r.v, r.t, r.s, r.c FROM {rows} "
    ).format(
        events=events, base=sql.SQL(XACT_BASE), rows=rows_from(0, counts[0], "o, v, t, s, n, c")
    )
    if len(counts) == 1:  # a plain insert (the library's contract tests use it so)
        return sql.SQL(
            "WITH ins AS ({insert}RETURNING notification_id, chain) "
            "SELECT notification_id, 0, chain FROM ins ORDER BY notification_id"
        ).format(insert=insert)
    views = sql.Identifier(schema, "planledger_plan_views")
    if counts[1] == 0:  # no plan events: no session's views to store
        head = sql.SQL(
            "WITH ins AS ({insert}RETURNING notification_id, chain), "
            "ok AS (SELECT NULL::text AS sid LIMIT 0)"
        )
        parts: list[sql.Composable] = [head.format(insert=insert)]
    else:
        parts = [
            sql.SQL(
                "WITH ins AS ({insert}RETURNING notification_id, originator_id, "
                "originator_version, chain), "
                "vr AS (SELECT * FROM {rows}), "
                # The sessions whose views this write stores: those whose view is at the event
                # before (a concurrent runner only ever writes an earlier one), and new ones.
                "ok AS (SELECT vr.sid FROM vr LEFT JOIN {views} p ON p.session_id = vr.sid "
                "WHERE (p.session_id IS NULL AND vr.before = 0) "
                "OR (p.version = vr.before AND p.corrupt IS NULL))"
            ).format(
                insert=insert,
                rows=rows_from(1, counts[1], "sid, before, version, revision, view"),
                views=views,
            )
        ]
        parts.append(
            sql.SQL(
                ", v AS (INSERT INTO {views} (session_id, version, position, revision, view) "
                "SELECT vr.sid, vr.version, (SELECT max(notification_id) FROM ins WHERE "
                "ins.originator_id = 'plan:' || vr.sid), vr.revision, vr.view FROM vr "
                "JOIN ok ON ok.sid = vr.sid "
                "ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, "
                "position = excluded.position, revision = excluded.revision, view = excluded.view "
                "WHERE {views}.version < excluded.version)"
            ).format(views=views)
        )
    if counts[2] != 0:
        parts.append(
            sql.SQL(
                ", h AS (INSERT INTO {table} "
                "(session_id, position, notification_id, kind, revision, entry, view, digest) "
                "SELECT r.sid, r.pos, ins.notification_id, r.kind, r.revision, r.entry, r.view, "
                "r.digest FROM {rows} JOIN ins ON ins.originator_id = 'plan:' || r.sid "
                "AND ins.originator_version = r.pos JOIN ok ON ok.sid = r.sid)"
            ).format(
                table=sql.Identifier(schema, "planledger_plan_history"),
                rows=rows_from(2, counts[2], "sid, pos, kind, revision, entry, view, digest"),
            )
        )
    if counts[3] != 0:
        sessions = sql.Identifier(schema, "planledger_sessions")
        parts.append(
            sql.SQL(
                ", s AS (INSERT INTO {table} ({columns}) SELECT * FROM {rows} "
                # A new session's row, or a newer state of a row there (opened_at and the
                # origin are only ever written by the row's insert).
                "WHERE r.version = 1 "
                "OR EXISTS (SELECT 1 FROM {table} x WHERE x.session_id = r.sid) "
                "ON CONFLICT (session_id) DO UPDATE SET "
                "version = excluded.version, mode = excluded.mode, "
                "updated_at = excluded.updated_at WHERE {table}.version < excluded.version)"
            ).format(
                table=sessions,
                columns=sql.SQL(SESSION_COLUMNS),
                rows=rows_from(
                    3, counts[3], "sid, version, mode, opened_at, updated_at, source, parent, cwd"
                ),
            )
        )
    parts.append(
        sql.SQL(
            " SELECT notification_id, (SELECT count(*) FROM ok), chain FROM ins "
            "ORDER BY notification_id"
        )
    )
    return sql.Composed(parts)
