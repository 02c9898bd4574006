"""Where the read side lives: view tables and tracking beside the events, on either database.

The view rows and the tracking position of a batch are written in one transaction, and the
tracking row is locked first, so two runners on one database never apply an event twice.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TYPE_CHECKING, Any

from domain.errors import CorruptHistory
from planledger.storage.scan import ChainedEvent, chained_stream_sql
from planledger.storage.schema import VIEWS
from planledger.storage.settings import DatabaseSettings
from planledger.storage.shares import SqliteShares, event_row_sql
from projections.session_list import session_item
from projections.shapes import CorruptMark, HistoryEntry, PlanView, SessionList

if TYPE_CHECKING:  # the write side, imported where it is used: a read (`plan show`) needs none
    from planledger.storage.view_rows import Row, ViewRows
    from projections.decode import PlanEventDecoder
    from projections.fold import ViewChanges
    from projections.runner import Bounds, LoadedView, ShareReader, Stored

COMMIT_EVENT = "e.originator_id, e.originator_version, e.topic, e.state"  # CommitRow's tail


class ViewStore(ABC):
    """Common logic; subclasses supply the dialect."""

    placeholder = "%s"
    events_table = ""
    # Which events a reader of the store-wide order may pass: all committed ones here (SQLite
    # writers commit one at a time); on PostgreSQL those below the horizon.
    settled = "1 = 1"
    id_column = "notification_id"
    for_update = " FOR UPDATE"  # lock the tracking row for the batch's transaction

    def __init__(self, database: DatabaseSettings) -> None:
        self.database = database
        self.lock = threading.RLock()

    # -- dialect hooks ------------------------------------------------------------------------

    @abstractmethod
    def execute_sql(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a statement on the writer's connection."""

    @abstractmethod
    def execute_many(self, sql: str, rows: Sequence[Row]) -> None:
        """Run a statement once per row on the writer's connection."""

    @abstractmethod
    def _write_transaction(self) -> AbstractContextManager[None]:
        """A transaction on the writer's connection."""

    @abstractmethod
    def read_event_rows(self, after: int, limit: int) -> list[tuple[Any, ...]]:
        """Committed events after `after`, in order, never skipping one still in flight: as
        the runner's event rows (projections.runner.event_rows)."""

    @abstractmethod
    def read_stream_rows(self, originator_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """Every stored event of these streams, each stream's in order: as the runner's event
        rows (projections.runner.event_rows)."""

    @abstractmethod
    def batch_bounds(self, after: int, limit: int) -> Bounds:
        """(how many, store position of the last) of the next `limit` committed events after
        `after`, never past one still in flight; (0, after) when there are none."""

    @abstractmethod
    def share_reader(self, count: int) -> ShareReader:
        """What forked workers read their share of a batch's events with (see
        planledger.storage.shares)."""

    @abstractmethod
    def wait_for_events(self, timeout: float) -> bool:
        """Return when new events may have been committed (True), or after `timeout` seconds
        with no sign of any (False)."""

    def leads_followers(self) -> bool:
        """Whether this process's follower (waiting in wait_for_events) is the one that moves
        the views' position after other processes' commits: on SQLite each one does."""
        return True

    def wake_followers(self) -> None:
        """Wake the followers of other processes (the views' position moved): on SQLite
        they see the file change (wait_for_events)."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Close every connection."""

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """A stretch of many large batches (a rebuild): written as this database writes them
        fastest, and left as durable as ever at its end."""
        yield

    @abstractmethod
    def between_batches(self) -> None:
        """Between two batches of bulk writes, while this process would wait for the next:
        what the database would otherwise do at their end (SQLite: copy the WAL written so
        far into the file)."""

    def reset(self) -> None:
        """Forget every view and position (the start of a rebuild)."""
        with self.lock, self._write_transaction():
            self.execute_sql("DELETE FROM planledger_plan_history")
            self.execute_sql("DELETE FROM planledger_plan_views")
            self.execute_sql("DELETE FROM planledger_sessions")
            self.execute_sql("UPDATE planledger_tracking SET position = 0")

    # -- tracking and writes ------------------------------------------------------------------

    def position(self, name: str) -> int:
        p = self.placeholder
        with self.lock:
            rows = self.execute_sql(
                f"SELECT position FROM planledger_tracking WHERE projection = {p}", (name,)
            )
        return int(rows[0][0]) if rows else 0

    def max_notification_id(self) -> int:
        with self.lock:
            rows = self.execute_sql(
                f"SELECT MAX({self.id_column}) FROM {self.events_table} WHERE {self.settled}"
            )
        return int(rows[0][0] or 0)

    def last_committed(self) -> int:
        """The highest position of any committed event, settled or not (on PostgreSQL it may
        lie above the horizon: a reader reaches it once the transactions before it end)."""
        rows = self._query(f"SELECT MAX({self.id_column}) FROM {self.events_table}")
        return int(rows[0][0] or 0)

    def events_past_views(self) -> bool:
        """Whether committed events lie past the views' position (on PostgreSQL also those an
        earlier transaction still in flight keeps above the horizon)."""
        rows = self._query(
            f"SELECT (SELECT MAX({self.id_column}) FROM {self.events_table}) > "
            f"(SELECT position FROM planledger_tracking WHERE projection = '{VIEWS}')"
        )
        return bool(rows[0][0])

    def event_count(self) -> int:
        """How many events the store holds (those a reader may pass)."""
        rows = self._query(f"SELECT COUNT(*) FROM {self.events_table} WHERE {self.settled}")
        return int(rows[0][0])

    def mark_corrupt(self, session_id: str, mark: CorruptMark) -> None:
        """Record that the session's history breaks a rule (found by verify)."""
        p = self.placeholder
        with self.lock, self._write_transaction():
            self.execute_sql(
                f"UPDATE planledger_plan_views SET corrupt = {p} WHERE session_id = {p}",
                (mark.model_dump_json(), session_id),
            )

    def horizon_holders(self, older_than: float) -> tuple[str, ...]:
        """What holds the readers of the store's order back for more than `older_than`
        seconds, said for a health report (nothing: only PostgreSQL has a horizon)."""
        return ()

    def status(self) -> tuple[int, int]:
        """(position the views have reached, last store position): equal when up to date."""
        rows = self._query(
            "SELECT (SELECT position FROM planledger_tracking WHERE projection = 'views'), "
            f"(SELECT MAX({self.id_column}) FROM {self.events_table} WHERE {self.settled})"
        )
        return int(rows[0][0] or 0), int(rows[0][1] or 0)

    def load_views(self, session_ids: Sequence[str]) -> dict[str, LoadedView]:
        from projections.runner import LoadedView

        rows = self._of_sessions(
            "SELECT session_id, version, view, corrupt FROM planledger_plan_views", session_ids
        )
        return {
            row[0]: LoadedView(
                int(row[1]), PlanView.model_validate(json_value(row[2])), row[3] is not None
            )
            for row in rows
        }

    def session_versions(self, session_ids: Sequence[str]) -> dict[str, int]:
        rows = self._of_sessions("SELECT session_id, version FROM planledger_sessions", session_ids)
        return {str(row[0]): int(row[1]) for row in rows}

    def _of_sessions(self, select: str, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """`select`'s rows of these sessions, on the runner's connection."""
        if not session_ids:
            return []
        marks = ", ".join([self.placeholder] * len(session_ids))
        with self.lock:
            return self.execute_sql(f"{select} WHERE session_id IN ({marks})", list(session_ids))

    def write_batch(
        self,
        expected_position: int,
        new_position: int,
        changes: ViewChanges,
        stored: Stored,
    ) -> None:
        """View rows, history rows and the new tracking position, in one transaction.

        StaleBatch if the tracking position is no longer `expected_position`.
        """
        self.write_batch_rows(expected_position, new_position, [self.batch_rows(changes, stored)])

    def batch_rows(self, changes: ViewChanges, stored: Stored) -> ViewRows:
        """A batch's changes as table rows (no I/O: a worker process may make them)."""
        from planledger.storage.view_rows import rows_of

        return rows_of(changes, lambda *key: stored.get(key, (None, None)))

    def write_batch_rows(
        self, expected_position: int, new_position: int, parts: Sequence[ViewRows]
    ) -> None:
        """`write_batch` of rows already made (parts of one batch, about distinct sessions)."""
        from planledger.storage.view_rows import ViewRows
        from projections.runner import StaleBatch

        p = self.placeholder
        rows = parts[0] if len(parts) == 1 else ViewRows.joined(parts)
        with self.lock, self._write_transaction():
            current = self._locked_position(VIEWS)
            if current != expected_position:
                raise StaleBatch(f"views are at {current}, batch expected {expected_position}")
            self._write_rows(rows)
            self.execute_sql(
                f"UPDATE planledger_tracking SET position = {p} WHERE projection = {p}",
                (new_position, VIEWS),
            )

    def _write_rows(self, rows: ViewRows) -> None:
        """A batch's rows, in the batch's transaction."""
        from planledger.storage.view_rows import write_rows

        write_rows(self.execute_many, rows, self.placeholder)

    def advance(self, expected_position: int, new_position: int) -> bool:
        """See ViewStorage.advance: one compare-and-set statement (SQLite's writers take turns
        at its write lock anyway; PostgreSQL's store skips a row another runner holds)."""
        p = self.placeholder
        with self.lock:
            return (
                self._changed(
                    f"UPDATE planledger_tracking SET position = {p} WHERE projection = {p} "
                    f"AND position = {p}",
                    (new_position, VIEWS, expected_position),
                )
                == 1
            )

    def _locked_position(self, name: str) -> int:
        rows = self.execute_sql(
            f"SELECT position FROM planledger_tracking WHERE projection = {self.placeholder}"
            + self.for_update,
            (name,),
        )
        return int(rows[0][0])

    # -- reads (their own connections: readers never queue behind the runner) ---------------

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read on a connection of the calling thread's own (never the writer's)."""

    def plan_view(self, session_id: str) -> tuple[PlanView, CorruptMark | None] | None:
        """The session's plan view, and the rule its history broke if it is corrupt."""
        found = self.plan_view_row(session_id)
        return found[:2] if found is not None else None

    def plan_view_row(self, session_id: str) -> tuple[PlanView, CorruptMark | None, int] | None:
        """plan_view, and the stream position of the last plan event the view was made
        from (0: none), in one read."""
        rows = self._query(
            "SELECT view, corrupt, version FROM planledger_plan_views WHERE session_id = "
            + self.placeholder,
            (session_id,),
        )
        if not rows:
            return None
        view, corrupt, version = rows[0]
        mark = CorruptMark.model_validate(json_value(corrupt)) if corrupt else None
        return PlanView.model_validate(json_value(view)), mark, int(version)

    def chained_rows(self, originator_id: str) -> list[ChainedEvent]:
        """The stream's events in order, each with its chain (what a read checks its view's
        events by, domain.chain)."""
        sql = chained_stream_sql(self.events_table, self.id_column, self.placeholder)
        rows = self._query(sql, (originator_id,))
        return [ChainedEvent(o, v, t, bytes(s), h, at) for o, v, t, s, h, at in rows]

    # -- the audit's own tables (checkpoints, tokens) -----------------------------------------

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A query written with this database's `placeholder`, on a reader's connection."""
        return self._query(sql, params)

    def write(self, sql: str, params: Sequence[Any] = ()) -> int:
        """A statement in a transaction of its own; how many rows it changed."""
        with self.lock, self._write_transaction():
            return self._changed(sql, params)

    @abstractmethod
    def _changed(self, sql: str, params: Sequence[Any]) -> int:
        """Run a statement on the writer's connection; the rows it changed."""

    # -- checkpoints ----------------------------------------------------------------------

    def heads_sql(self) -> str:
        """Each stream's last event at a store position (its one parameter): (aggregate id,
        version, chain)."""
        t, i, p = self.events_table, self.id_column, self.placeholder
        return (
            f"SELECT e.originator_id, e.originator_version, COALESCE(e.chain, '') FROM {t} e "
            f"JOIN (SELECT originator_id, MAX(originator_version) AS v FROM {t} WHERE {i} <= {p} "
            "GROUP BY originator_id) m "
            "ON e.originator_id = m.originator_id AND e.originator_version = m.v"
        )

    @abstractmethod
    def chain_heads(self, position: int | None = None) -> tuple[int, list[tuple[Any, ...]]]:
        """The store position (`position`, else the last committed one) and each stream's
        last event there, read together (see heads_sql)."""

    def save_checkpoint(self, position: int, made_at: str, statement: str) -> None:
        p = self.placeholder
        with self.lock, self._write_transaction():
            self.execute_sql(
                "INSERT INTO planledger_checkpoints (position, made_at, statement) "
                f"VALUES ({p}, {p}, {p}) ON CONFLICT (position) DO UPDATE SET "
                "made_at = excluded.made_at, statement = excluded.statement",
                (position, made_at, statement),
            )

    def latest_checkpoint(self) -> str | None:
        """The statement of the checkpoint of the highest position (None: none made)."""
        rows = self._query(
            "SELECT statement FROM planledger_checkpoints ORDER BY position DESC LIMIT 1"
        )
        return str(rows[0][0]) if rows else None

    def streams_cut_short(self) -> list[tuple[str, int, int]]:
        """(session id, version its view was made from, last position of its plan stream now)
        of every session whose plan stream now ends before its view: events that are gone."""
        t = self.events_table
        rows = self._query(
            "SELECT v.session_id, v.version, COALESCE(m.last, 0) FROM planledger_plan_views v "
            f"LEFT JOIN (SELECT originator_id, MAX(originator_version) AS last FROM {t} "
            "GROUP BY originator_id) m ON m.originator_id = 'plan:' || v.session_id "
            "WHERE v.version > COALESCE(m.last, 0) ORDER BY v.session_id"
        )
        return [(str(sid), int(version), int(last)) for sid, version, last in rows]

    def plan_at(self, session_id: str, revision: int, decoder: PlanEventDecoder) -> PlanView | None:
        """The plan as commit `revision` left it (0: as the plan was created), its plan read
        back from the commit event with `decoder` (CorruptHistory if that event changed)."""
        from projections.commit_views import CommitRow, commit_view
        from projections.fold import empty_view

        p = self.placeholder
        if revision == 0:
            rows = self._query(
                f"SELECT opened_at FROM planledger_sessions WHERE session_id = {p}", (session_id,)
            )
            return empty_view(session_id, rows[0][0]) if rows else None
        rows = self._query(
            f"SELECT h.session_id, h.position, h.view, h.digest, {COMMIT_EVENT} "
            f"{self._history_with_commits} WHERE h.session_id = {p} AND h.revision = {p} "
            "AND h.kind = 'committed'",
            (session_id, revision),
        )
        return commit_view(CommitRow(*rows[0]), decoder) if rows else None

    @property
    def _history_with_commits(self) -> str:
        """History rows `h`, each commit's with its event `e` as stored now."""
        return (
            f"FROM planledger_plan_history h LEFT JOIN {self.events_table} e "
            f"ON h.kind = 'committed' AND e.{self.id_column} = h.notification_id"
        )

    def views_changed_after(self, position: int) -> list[tuple[str, PlanView]]:
        rows = self._query(
            "SELECT session_id, view FROM planledger_plan_views WHERE corrupt IS NULL "
            f"AND position > {self.placeholder}",
            (position,),
        )
        return [(row[0], PlanView.model_validate(json_value(row[1]))) for row in rows]

    def sessions_changed_after(self, position: int, limit: int) -> list[str]:
        """The ids of at most `limit` sessions whose view changed after `position` (no view
        is read)."""
        p = self.placeholder
        rows = self._query(
            "SELECT session_id FROM planledger_plan_views WHERE corrupt IS NULL "
            f"AND position > {p} LIMIT {p}",
            (position, limit),
        )
        return [row[0] for row in rows]

    def views_page(self, after: str, limit: int) -> list[PlanView]:
        """At most `limit` views of sessions that are not corrupt, the first after session
        `after` in id order (a pass over every view holds one page at a time)."""
        p = self.placeholder
        rows = self._query(
            "SELECT view FROM planledger_plan_views WHERE corrupt IS NULL "
            f"AND session_id > {p} ORDER BY session_id LIMIT {p}",
            (after, limit),
        )
        return [PlanView.model_validate(json_value(row[0])) for row in rows]

    def view_count(self) -> int:
        """How many sessions have a view that is not corrupt."""
        rows = self._query("SELECT COUNT(*) FROM planledger_plan_views WHERE corrupt IS NULL")
        return int(rows[0][0])

    def history(self, session_id: str) -> list[HistoryEntry]:
        rows = self._query(
            "SELECT entry FROM planledger_plan_history WHERE session_id = "
            f"{self.placeholder} ORDER BY position",
            (session_id,),
        )
        return [HistoryEntry.model_validate(json_value(row[0])) for row in rows]

    def feed_after(
        self, after: int, session_id: str | None, limit: int, decoder: PlanEventDecoder
    ) -> list[tuple[str, int, HistoryEntry, PlanView | None]]:
        """History rows after store position `after` (one session or all), in store order,
        each commit's with the plan it left (None when its event changed since: never shown
        unchecked), read back from its event with `decoder`."""
        from projections.commit_views import CommitRow, commit_view

        p = self.placeholder
        # Up to the views' position only: a row below it never appears later (past it, a
        # writer's rows may commit before those of another still in flight).
        reached = (
            "h.notification_id <= (SELECT position FROM planledger_tracking "
            f"WHERE projection = '{VIEWS}')"
        )
        if session_id:  # by the primary key: a session's positions are in store order too
            where, order = f"h.session_id = {p} AND h.notification_id > {p}", "h.position"
            params: list[Any] = [session_id, after]
        else:
            where, order, params = f"h.notification_id > {p}", "h.notification_id", [after]
        where += f" AND {reached}"
        rows = self._query(
            "SELECT h.session_id, h.notification_id, h.entry, h.position, h.view, h.digest, "
            f"{COMMIT_EVENT} {self._history_with_commits} "
            f"WHERE {where} ORDER BY {order} LIMIT {p}",
            [*params, limit],
        )
        found: list[tuple[str, int, HistoryEntry, PlanView | None]] = []
        for sid, notification_id, entry, *commit in rows:
            plan = None
            if commit[1] is not None:  # a commit's view stub
                with suppress(CorruptHistory):
                    plan = commit_view(CommitRow(sid, *commit), decoder)
            found.append(
                (sid, int(notification_id), HistoryEntry.model_validate(json_value(entry)), plan)
            )
        return found

    def session_list(self) -> SessionList:
        """Every session with its mode, its plan at a glance and its origin, the most recently
        active first."""
        rows = self._query(
            "SELECT s.session_id, s.mode, s.updated_at, s.source, s.parent_session_id, s.cwd, "
            "v.view, v.corrupt IS NOT NULL FROM planledger_sessions s "
            "LEFT JOIN planledger_plan_views v ON v.session_id = s.session_id"
        )
        items = [
            session_item(
                session_id,
                mode,
                session_at,
                (source, parent, cwd),
                json_value(view) if view is not None else None,
                bool(corrupt),
            )
            for session_id, mode, session_at, source, parent, cwd, view, corrupt in rows
        ]
        items.sort(key=lambda item: (item.updated_at, item.session_id), reverse=True)
        return SessionList(sessions=items)


def json_value(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


WAL_AUTOCHECKPOINT = 1000  # pages: SQLite's default


class SqliteViewStore(ViewStore):
    placeholder = "?"
    events_table = "stored_events"
    id_column = "rowid"
    for_update = ""  # BEGIN IMMEDIATE already holds the write lock

    def __init__(self, database: DatabaseSettings) -> None:
        super().__init__(database)
        self.path = database.env["SQLITE_DBNAME"]
        self.timeout = float(database.env["SQLITE_LOCK_TIMEOUT"])
        self.conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self.timeout
        )
        # The views are derived data: a crash may lose the last view transactions (WAL,
        # synced at checkpoints), never half of one (the position commits with its rows),
        # and the events replay them. Writers' event commits keep their own full sync.
        self.conn.execute("PRAGMA synchronous = NORMAL")
        # Some builds of SQLite (Debian's) erase deleted content by default, whole pages
        # included: a rebuild's reset wrote every page of the views zeroed into the WAL (15 MB
        # on the bulk bench's store; 65 ms, and as long again to copy it back). FAST erases a
        # deleted row only inside a page that is written anyway: the reset takes 7 ms.
        self.conn.execute("PRAGMA secure_delete = FAST")
        self._data_version = -1
        self._readers = threading.local()
        self._all_readers: list[sqlite3.Connection] = []

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        # The WAL is copied into the database file once, at the end, instead of at every
        # 1,000 pages written (each copy also rewrites the pages of the tables' indexes): a
        # rebuild's writes take about half the time.
        with self.lock:
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            yield
        finally:
            with self.lock:
                self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT}")
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def between_batches(self) -> None:
        # A batch of a forked rebuild is about 10,000 events: a copy at each still rewrites
        # the indexes' pages far less often than one per 1,000 pages, and only the last
        # batch's pages are left to copy at the end, when nothing else is running.
        with self.lock:
            self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        conn = getattr(self._readers, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=self.timeout
            )
            self._readers.conn = conn
            with self.lock:
                self._all_readers.append(conn)
        return conn.execute(sql, params).fetchall()

    def execute_sql(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def _changed(self, sql: str, params: Sequence[Any]) -> int:
        return self.conn.execute(sql, params).rowcount

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def read_event_rows(self, after: int, limit: int) -> list[tuple[Any, ...]]:
        # SQLite commits one writer at a time, and rowids are assigned under the write lock:
        # a reader never sees a later id before an earlier one is committed.
        with self.lock:
            return self.execute_sql(
                f"{event_row_sql('stored_events', 'rowid')} WHERE e.rowid > ? "
                "ORDER BY e.rowid LIMIT ?",
                (after, limit),
            )

    def read_stream_rows(self, originator_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        marks = ", ".join("?" * len(originator_ids))
        with self.lock:
            return self.execute_sql(
                f"{event_row_sql('stored_events', 'rowid')} WHERE e.originator_id IN ({marks}) "
                "ORDER BY e.originator_id, e.originator_version",
                list(originator_ids),
            )

    def batch_bounds(self, after: int, limit: int) -> Bounds:
        with self.lock:  # (committed in rowid order: see read_event_rows)
            rows = self.execute_sql(
                "SELECT count(*), COALESCE(max(rowid), ?) FROM (SELECT rowid FROM stored_events "
                "WHERE rowid > ? ORDER BY rowid LIMIT ?)",
                (after, after, limit),
            )
        return int(rows[0][0]), int(rows[0][1])

    def chain_heads(self, position: int | None = None) -> tuple[int, list[tuple[Any, ...]]]:
        self._query("BEGIN")  # one snapshot for both reads
        try:
            if position is None:
                position = int(
                    self._query("SELECT COALESCE(MAX(rowid), 0) FROM stored_events")[0][0]
                )
            return position, self._query(self.heads_sql(), (position,))
        finally:
            self._query("COMMIT")

    def share_reader(self, count: int) -> ShareReader:
        return SqliteShares(self.path, self.timeout, count)

    def wait_for_events(self, timeout: float) -> bool:
        # SQLite has no notifications: watch the file's data_version, which changes on
        # every commit by another connection.
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
            if version != self._data_version:
                self._data_version = version
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def close(self) -> None:
        for conn in [*self._all_readers, self.conn]:
            conn.close()
