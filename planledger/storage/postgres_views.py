"""The view store on PostgreSQL: readers from a pool made on demand, the runner's own
connection, and a LISTEN connection; each made again after it broke, so the read side heals
after the database restarts or a backend is terminated."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from planledger.storage.horizon import HORIZON, HORIZON_HOLDER, holder_warning
from planledger.storage.schema import VIEWS
from planledger.storage.settings import POOL_TIMEOUT, DatabaseSettings, postgres_conninfo
from planledger.storage.shares import PostgresShares, event_row_sql
from planledger.storage.view_rows import (
    COPY_HISTORY,
    HISTORY_COLUMNS,
    SESSION_COLUMNS,
    ViewRows,
    columns,
)
from planledger.storage.views import ViewStore
from projections.runner import Bounds, ShareReader

Rows = TypeVar("Rows")

# The statements of planledger.storage.view_rows, for rows sent as column arrays (binary: no
# quoting of the JSON in an array literal).
UPSERT_VIEWS = (
    "INSERT INTO planledger_plan_views (session_id, version, position, revision, view) "
    "SELECT * FROM unnest(%b::text[], %b::bigint[], %b::bigint[], %b::bigint[], %b::json[]) "
    "ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, "
    "position = excluded.position, revision = excluded.revision, view = excluded.view "
    "WHERE planledger_plan_views.version < excluded.version"
)
MARK_CORRUPT = (
    "INSERT INTO planledger_plan_views (session_id, version, position, revision, view, "
    "corrupt) SELECT s, v, p, 0, w, c FROM unnest(%b::text[], %b::bigint[], %b::bigint[], "
    "%b::json[], %b::json[]) AS r(s, v, p, w, c) ON CONFLICT (session_id) DO UPDATE SET "
    "corrupt = excluded.corrupt, position = excluded.position"
)
INSERT_HISTORY = (
    f"INSERT INTO planledger_plan_history ({HISTORY_COLUMNS}) SELECT * FROM unnest(%b::text[], "
    "%b::bigint[], %b::bigint[], %b::text[], %b::bigint[], %b::json[], %b::json[], %b::text[]) "
    "ON CONFLICT (session_id, position) DO NOTHING"
)
UPSERT_SESSIONS = (
    f"INSERT INTO planledger_sessions ({SESSION_COLUMNS}) "
    "SELECT * FROM unnest(%b::text[], %b::bigint[], %b::text[], %b::text[], %b::text[], "
    "%b::text[], %b::text[], %b::text[]) "
    "ON CONFLICT (session_id) DO UPDATE SET version = excluded.version, mode = excluded.mode, "
    "updated_at = excluded.updated_at WHERE planledger_sessions.version < excluded.version"
)

# Move the views' position from `expected` to `new` unless another runner holds its row;
# returns (moved, the position as this statement's snapshot saw it): not moved and still at
# `expected` when held.
ADVANCE = (
    "WITH free AS (SELECT projection FROM planledger_tracking WHERE projection = %(name)s "
    "AND position = %(expected)s FOR UPDATE SKIP LOCKED), "
    "moved AS (UPDATE planledger_tracking t SET position = %(new)s FROM free "
    "WHERE t.projection = free.projection RETURNING t.projection) "
    "SELECT EXISTS (SELECT 1 FROM moved), "
    "(SELECT position FROM planledger_tracking WHERE projection = %(name)s)"
)


# One follower per store moves the views' position: the holder of this session-level advisory
# lock on its listening connection (released when that connection ends). A connection that may
# not move the position never takes it. (The set-up's lock is another key: schema.py.)
LEAD = (
    "SELECT CASE WHEN NOT pg_is_in_recovery() AND has_table_privilege(%(tracking)s, 'UPDATE') "
    "THEN pg_try_advisory_lock(%(key)s, hashtext(%(tracking)s)) ELSE false END"
)
LEAD_KEY = 0x706C  # the advisory lock's first key ("pl"); the second is the store's
LEAD_RETRY = 1.0  # seconds between a follower's tries to lead
WAKE_CHANNEL = "planledger_views"  # the leader's: the views' position moved


class PostgresViewStore(ViewStore):
    settled = f"notification_id < {HORIZON}"

    def __init__(self, database: DatabaseSettings) -> None:
        super().__init__(database)
        env = database.env
        self.schema = env.get("POSTGRES_SCHEMA", "public")
        self.conninfo = postgres_conninfo(database)
        self.events_table = f'"{self.schema}".planledger_events'
        self.channel = "planledger_events"  # the library NOTIFYs this channel on every insert
        self._conn: psycopg.Connection[Any] | None = None  # the runner's, opened on first use
        self.listener: psycopg.Connection[Any] | None = None
        self._leading_on: psycopg.Connection[Any] | None = None  # the listener that leads
        self._following_on: psycopg.Connection[Any] | None = None  # one that follows it
        self._lead_tried = -LEAD_RETRY
        # Connections are made on demand (a one-shot command opens one); a broken one is
        # discarded when it goes back, so reads heal after the database restarts.
        self.readers = ConnectionPool(
            self.conninfo,
            min_size=0,
            max_size=8,
            kwargs={"autocommit": True},
            open=True,
            timeout=POOL_TIMEOUT,
            reconnect_timeout=POOL_TIMEOUT,
        )

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """The runner's connection, made again after it broke (a restart, a terminated
        backend): the next batch then goes on from the stored position."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            if self._conn is not None:
                self._conn.close()
            self._conn = psycopg.connect(self.conninfo, autocommit=True)
            # The views are derived data: a crash may lose the last view transactions, never
            # half of one (the position commits with its rows), and the events replay them.
            self._conn.execute("SET synchronous_commit = off")
        return self._conn

    def _write_rows(self, rows: ViewRows) -> None:
        # One statement per table, its rows sent as column arrays (one round trip, one plan,
        # not one execution per row); history rows, only ever inserted, by COPY.
        with self.conn.cursor() as cursor:
            for statement, table in (
                (UPSERT_VIEWS, rows.views),
                (MARK_CORRUPT, rows.corrupt),
            ):
                if table:
                    cursor.execute(statement, columns(table))
            if rows.history:
                try:
                    with self.conn.transaction(), cursor.copy(COPY_HISTORY) as copy:
                        for row in rows.history:  # (in a savepoint)
                            copy.write_row(row)
                except psycopg.errors.UniqueViolation:
                    # A writer stored some of these with their events (a new session's, while
                    # a rebuild had reset the views): the others, one statement.
                    cursor.execute(INSERT_HISTORY, columns(rows.history))
            if rows.sessions:
                cursor.execute(UPSERT_SESSIONS, columns(rows.sessions))

    def advance(self, expected_position: int, new_position: int) -> bool:
        # A row another runner holds (in a batch's transaction) is left to it: SKIP LOCKED,
        # so no writing process's runner queues behind another's.
        with self.lock, self.conn.cursor() as cursor:
            cursor.execute(
                ADVANCE, {"name": VIEWS, "expected": expected_position, "new": new_position}
            )
            moved = cursor.fetchone()
            return moved is not None and (moved[0] or moved[1] == expected_position)

    def between_batches(self) -> None:
        pass  # the server's own checkpointer writes its WAL's pages back

    def reset(self) -> None:
        """Forget every view and position: TRUNCATE (in the same transaction as the position)
        frees the tables at once, where DELETE would mark each row and index entry dead."""
        with self.lock, self._write_transaction():
            self.execute_sql(
                "TRUNCATE planledger_plan_history, planledger_plan_views, planledger_sessions"
            )
            self.execute_sql("UPDATE planledger_tracking SET position = 0")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._on_reader(lambda conn: conn.execute(sql, params).fetchall())

    def _on_reader(self, read: Callable[[psycopg.Connection[Any]], Rows]) -> Rows:
        """`read` on a pooled reader's connection."""
        for attempt in (1, 2):  # a pooled connection may have died with its server: once more
            try:
                with self.readers.connection() as conn:
                    return read(conn)
            except PoolTimeout:
                raise  # no connection to be had: the server is away, not one connection
            except (psycopg.OperationalError, psycopg.InterfaceError):
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def execute_sql(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(sql, rows)

    def _changed(self, sql: str, params: Sequence[Any]) -> int:
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    def read_event_rows(self, after: int, limit: int) -> list[tuple[Any, ...]]:
        # Below the horizon only (planledger.storage.horizon): no event with a lower position
        # can commit after we have passed it. In binary (the states arrive as they are
        # stored, not hex-encoded).
        def read(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            return (
                conn.cursor(binary=True)
                .execute(
                    f"{event_row_sql(self.events_table, 'notification_id')} "
                    f"WHERE e.notification_id > %s AND e.notification_id < {HORIZON} "
                    "ORDER BY e.notification_id LIMIT %s",
                    (after, limit),
                )
                .fetchall()
            )

        return self._on_reader(read)

    def read_stream_rows(self, originator_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        def read(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            return (
                conn.cursor(binary=True)
                .execute(
                    f"{event_row_sql(self.events_table, 'notification_id')} "
                    "WHERE e.originator_id = ANY(%s) "
                    "ORDER BY e.originator_id, e.originator_version",
                    (list(originator_ids),),
                )
                .fetchall()
            )

        return self._on_reader(read)

    def horizon_holders(self, older_than: float) -> tuple[str, ...]:
        rows = self._query(HORIZON_HOLDER.format(events=self.events_table), (older_than,))
        return tuple(holder_warning(*row) for row in rows)

    def chain_heads(self, position: int | None = None) -> tuple[int, list[tuple[Any, ...]]]:
        def read(conn: psycopg.Connection[Any]) -> tuple[int, list[tuple[Any, ...]]]:
            at = position
            if at is None:  # the last one a reader may pass (planledger.storage.horizon)
                found = conn.execute(
                    f"SELECT COALESCE(MAX(notification_id), 0) FROM {self.events_table} "
                    f"WHERE {self.settled}"
                ).fetchone()
                at = int(found[0]) if found else 0
            return at, conn.execute(self.heads_sql(), (at,)).fetchall()

        return self._on_reader(read)

    def batch_bounds(self, after: int, limit: int) -> Bounds:
        # The first `limit` positions after `after`, then those below the horizon: the same
        # rows as the first `limit` between the two (every position below the horizon comes
        # before every one above it). Asked this way, the planner walks the index for them
        # whatever it knows of the table; with the horizon inside, a table never analyzed
        # (a store just imported) was read whole and sorted: 31-43 ms a call, not 6-14.
        row = self._query(
            "SELECT count(*), COALESCE(max(notification_id), %s) FROM (SELECT "
            f"notification_id FROM {self.events_table} WHERE notification_id > %s "
            f"ORDER BY notification_id LIMIT %s) AS batch WHERE notification_id < {HORIZON}",
            (after, after, limit),
        )[0]
        return int(row[0]), int(row[1])

    def share_reader(self, count: int) -> ShareReader:
        return PostgresShares(self.conninfo, self.events_table, count)

    def wait_for_events(self, timeout: float) -> bool:
        try:
            if self.listener is None:
                self.listener = psycopg.connect(self.conninfo, autocommit=True)
                self.listener.execute(f"LISTEN {self.channel}")
                return True  # listening (again): whatever came before, re-query once
            for _ in self.listener.notifies(timeout=timeout, stop_after=1):
                return True
            return False
        except psycopg.Error:
            # Listen again on a new connection next time (the caller re-queries from its
            # position, so no event is missed in between).
            if self.listener is not None:
                self.listener.close()
            self.listener = None
            raise

    def leads_followers(self) -> bool:
        """Whether this follower leads (see LEAD), tried again at most every LEAD_RETRY
        seconds. The leader listens for every commit; the others only for its wake-ups
        (wake_followers), so that a commit does not wake every process on the store."""
        listener = self.listener
        if listener is None:
            return False
        if self._leading_on is listener:
            return True
        now = time.monotonic()
        if now - self._lead_tried < LEAD_RETRY:
            return False
        self._lead_tried = now
        tracking = f'"{self.schema}".planledger_tracking'
        row = listener.execute(LEAD, {"tracking": tracking, "key": LEAD_KEY}).fetchone()
        leads = bool(row is not None and row[0])
        if leads:
            self._leading_on = listener
            listener.execute(f"LISTEN {self.channel}")  # (again, after following)
            listener.execute(f"UNLISTEN {WAKE_CHANNEL}")
        elif self._following_on is not listener:
            self._following_on = listener
            listener.execute(f"LISTEN {WAKE_CHANNEL}")
            listener.execute(f"UNLISTEN {self.channel}")
        return leads

    def wake_followers(self) -> None:
        if self.listener is not None:
            self.listener.execute(f"NOTIFY {WAKE_CHANNEL}")

    def close(self) -> None:
        self.readers.close()
        for conn in (self._conn, self.listener):
            if conn is not None:
                conn.close()
