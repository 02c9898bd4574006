"""Schema set-up, once per database: a version mark checked with one cheap read, and the DDL
run under a lock by the first process only (concurrent first starts never fail).

PostgreSQL: a session-level advisory lock serialises the set-up (`CREATE OR REPLACE FUNCTION`
and `CREATE TABLE IF NOT EXISTS` are not safe to race); the version lives in
`planledger_meta`. SQLite: `BEGIN IMMEDIATE` serialises it; the version is `PRAGMA user_version`.
A newer view schema drops the (derived) view tables and lets the runner rebuild them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planledger.storage.chain_schema import postgres_chain_setup, sqlite_chain_setup
from planledger.storage.horizon import postgres_positions_setup
from planledger.storage.settings import DatabaseSettings, postgres_conninfo

# Bump when a view table changes shape: the views are dropped and rebuilt from the events.
# 3: PostgreSQL keeps the views' JSON as `json`, not `jsonb`; history has no index of its own
#    for one session's feed (its primary key, by stream position, is in the same order).
# 4: sessions keep where they come from (source, parent_session_id, cwd).
# 5: a commit's history row keeps its view without the plan, and a digest of its event (the
#    plan is read back from the event: projections.commit_views); only commits are indexed by
#    revision.
# 6: events carry their hash chain (chained once by the migration), checkpoints are kept
#    (planledger.storage.chain_schema).
# 7: PostgreSQL: new events' store positions come from their transaction's id (writers take no
#    table lock: planledger.storage.horizon).
SCHEMA_VERSION = 7
ADVISORY_LOCK_KEY = 7_310_423_118  # arbitrary, constant: "planledger schema set-up"
VIEWS = "views"

VIEW_TABLES = (
    "planledger_plan_history",
    "planledger_plan_views",
    "planledger_sessions",
    "planledger_tracking",
)


def view_ddl(json_type: str) -> list[str]:
    j = json_type
    return [
        "CREATE TABLE IF NOT EXISTS planledger_tracking "
        "(projection TEXT PRIMARY KEY, position BIGINT NOT NULL)",
        # version: stream position of the last plan event applied; position: its store
        # position; corrupt: the rule a commit broke (the view then stays at the last good one)
        "CREATE TABLE IF NOT EXISTS planledger_plan_views (session_id TEXT PRIMARY KEY, "
        "version BIGINT NOT NULL, position BIGINT NOT NULL, revision BIGINT NOT NULL, "
        f"view {j} NOT NULL, corrupt {j})",
        "CREATE INDEX IF NOT EXISTS planledger_plan_views_position "
        "ON planledger_plan_views (position)",
        "CREATE TABLE IF NOT EXISTS planledger_plan_history (session_id TEXT NOT NULL, "
        "position BIGINT NOT NULL, notification_id BIGINT NOT NULL, kind TEXT NOT NULL, "
        f"revision BIGINT, entry {j} NOT NULL, view {j}, digest TEXT, "
        "PRIMARY KEY (session_id, position))",
        "CREATE INDEX IF NOT EXISTS planledger_plan_history_store "
        "ON planledger_plan_history (notification_id)",
        "CREATE INDEX IF NOT EXISTS planledger_plan_history_revision "
        "ON planledger_plan_history (session_id, revision) WHERE kind = 'committed'",
        "CREATE TABLE IF NOT EXISTS planledger_sessions (session_id TEXT PRIMARY KEY, "
        "version BIGINT NOT NULL, mode TEXT NOT NULL, opened_at TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, source TEXT, parent_session_id TEXT, cwd TEXT)",
    ]


def schema_is_current(settings: DatabaseSettings) -> bool:
    """One cheap read of the version mark (and, on PostgreSQL, a direct connection that fails
    at once, naming the cause, when the database cannot be reached)."""
    if settings.is_postgres:
        import psycopg

        with psycopg.connect(postgres_conninfo(settings), autocommit=True) as conn:
            schema = settings.env.get("POSTGRES_SCHEMA", "public")
            return _postgres_version(conn, schema) == SCHEMA_VERSION
    path = settings.env["SQLITE_DBNAME"]
    if path != ":memory:" and not Path(path).exists():
        return False
    reader = sqlite3.connect(path, timeout=float(settings.env["SQLITE_LOCK_TIMEOUT"]))
    try:
        return bool(reader.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION)
    finally:
        reader.close()


def ensure_schema(settings: DatabaseSettings, *recorders: Any) -> None:
    """Set up the tables of `settings`' database once: the library's event and snapshot tables
    (from its `recorders`) and the views, unless the version mark says they are current."""
    present = [recorder for recorder in recorders if recorder is not None]
    if settings.is_postgres:
        import psycopg

        def create_event_tables() -> None:
            for recorder in present:
                recorder.create_table()

        ensure_postgres_schema(
            lambda: psycopg.connect(postgres_conninfo(settings), autocommit=True),
            settings.env.get("POSTGRES_SCHEMA", "public"),
            create_event_tables,
        )
    else:
        statements = [s for recorder in present for s in recorder.create_table_statements]
        ensure_sqlite_schema(
            settings.env["SQLITE_DBNAME"], statements, float(settings.env["SQLITE_LOCK_TIMEOUT"])
        )


def ensure_postgres_schema(
    connect: Callable[[], Any], schema: str, create_event_tables: Callable[[], None]
) -> None:
    """Create or upgrade the tables of `schema` unless the version mark says they are current."""
    with connect() as conn:
        if _postgres_version(conn, schema) == SCHEMA_VERSION:
            return
        conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_KEY,))
        try:
            found = _postgres_version(conn, schema)
            if found == SCHEMA_VERSION:
                return  # another process set it up while we waited
            create_event_tables()
            with conn.transaction():
                # Not current: the view tables (derived data) are dropped and rebuilt.
                for table in VIEW_TABLES:
                    conn.execute(f'DROP TABLE IF EXISTS "{schema}".{table}')
                conn.execute(f'SET LOCAL search_path TO "{schema}"')
                postgres_chain_setup(conn, schema)
                postgres_positions_setup(conn, f'"{schema}".planledger_events')
                # `json` keeps the text as sent: no SQL looks inside it, and `jsonb` cost a
                # parse into its binary form on every write and back to text on every read.
                for statement in view_ddl("JSON"):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO planledger_tracking (projection, position) VALUES (%s, 0) "
                    "ON CONFLICT (projection) DO NOTHING",
                    (VIEWS,),
                )
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS planledger_meta "
                    "(key TEXT PRIMARY KEY, value BIGINT NOT NULL)"
                )
                conn.execute(
                    "INSERT INTO planledger_meta (key, value) VALUES ('schema', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (SCHEMA_VERSION,),
                )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))


def _postgres_version(conn: Any, schema: str) -> int | None:
    exists = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".planledger_meta',)).fetchone()
    if exists is None or exists[0] is None:
        return None
    row = conn.execute(
        f"SELECT value FROM \"{schema}\".planledger_meta WHERE key = 'schema'"
    ).fetchone()
    return int(row[0]) if row else None


def ensure_sqlite_schema(path: str, event_table_statements: list[str], timeout: float) -> None:
    """Create or upgrade the tables of the SQLite file unless `user_version` says current."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=timeout)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = conn.execute("PRAGMA user_version").fetchone()[0]
            if found != SCHEMA_VERSION:
                for statement in event_table_statements:
                    conn.execute(statement)
                sqlite_chain_setup(conn)
                for table in VIEW_TABLES:  # derived data: rebuilt from the events
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in view_ddl("TEXT"):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO planledger_tracking (projection, position) VALUES (?, 0) "
                    "ON CONFLICT (projection) DO NOTHING",
                    (VIEWS,),
                )
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
