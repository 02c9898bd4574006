"""Every stored event in stream order, read in pages: the one pass whole-store work makes.

Pages are keyed on the events' primary key, (originator_id, originator_version), so each is an
index range read on either database and no page holds a transaction open. PostgreSQL sends
the rows in binary (no hex encoding of the JSON states: half the time of a text read).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from planledger.storage.settings import DatabaseSettings, postgres_conninfo

PAGE = 5000
Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


class ChainedEvent(NamedTuple):
    """A stored event with its chain: what a mapper reads of the library's StoredEvent, and
    what domain.chain checks."""

    originator_id: str
    originator_version: int
    topic: str
    state: bytes
    chain: str | None
    position: int = 0  # its store position (notification id; 0: not read)


def chained_stream_sql(events_table: str, position_column: str, placeholder: str) -> str:
    """The SELECT of one stream's events in order, as ChainedEvent's fields."""
    return (
        f"SELECT originator_id, originator_version, topic, state, chain, {position_column} "
        f"FROM {events_table} WHERE originator_id = {placeholder} ORDER BY originator_version"
    )


@contextmanager
def _connection(database: DatabaseSettings) -> Iterator[tuple[Query, str, str, str]]:
    """A read-only query function, the events table, the placeholder and the store-position
    column of the database."""
    if database.is_postgres:
        import psycopg

        schema = database.env.get("POSTGRES_SCHEMA", "public")
        with psycopg.connect(postgres_conninfo(database), autocommit=True) as conn:
            cursor = conn.cursor(binary=True)
            yield (
                lambda sql, args: cursor.execute(sql, args).fetchall(),
                f'"{schema}".planledger_events',
                "%s",
                "notification_id",
            )
        return
    db = sqlite3.connect(database.env["SQLITE_DBNAME"], timeout=30)
    try:
        yield (lambda sql, args: db.execute(sql, args).fetchall(), "stored_events", "?", "rowid")
    finally:
        db.close()


def scan_events(
    database: DatabaseSettings, lower: str = "", upper: str | None = None, page: int = PAGE
) -> Iterator[ChainedEvent]:
    """The events of the streams whose id is in [lower, upper), ordered by stream id and
    version (so each stream's events arrive together, from its first)."""
    with _connection(database) as (query, table, p, position):
        bound = f" AND originator_id < {p}" if upper is not None else ""
        head = (
            f"SELECT originator_id, originator_version, topic, state, chain, {position} "
            f"FROM {table} WHERE "
        )
        tail = f"{bound} ORDER BY originator_id, originator_version LIMIT {p}"
        extra = [upper] if upper is not None else []
        rows = query(head + f"originator_id >= {p}" + tail, [lower, *extra, page])
        while rows:
            for originator_id, version, topic, state, chain, at in rows:
                yield ChainedEvent(originator_id, version, topic, bytes(state), chain, at)
            if len(rows) < page:
                return
            after = f"(originator_id, originator_version) > ({p}, {p})"
            rows = query(head + after + tail, [rows[-1][0], rows[-1][1], *extra, page])


def split_points(database: DatabaseSettings, parts: int, min_events: int) -> list[str]:
    """Stream ids that cut the store into `parts` key ranges of about as many events each
    (none when the store holds fewer than `min_events` events)."""
    with _connection(database) as (query, table, p, _):
        count = int(query(f"SELECT count(*) FROM {table}", [])[0][0])
        if parts < 2 or count < min_events:
            return []
        points: list[str] = []
        for part in range(1, parts):
            rows = query(
                f"SELECT originator_id FROM {table} ORDER BY originator_id, originator_version "
                f"LIMIT 1 OFFSET {p}",
                [count * part // parts],
            )
            if rows and rows[0][0] not in points:
                points.append(str(rows[0][0]))
        return points


def session_events_of(database: DatabaseSettings, topic: str) -> list[ChainedEvent]:
    """Every session stream's events of this topic, in stream order (the session streams' key
    range: an index range read), each with its store position."""
    with _connection(database) as (query, table, p, position):
        rows = query(
            f"SELECT originator_id, originator_version, topic, state, chain, {position} "
            f"FROM {table} WHERE originator_id >= 'session:' AND originator_id < 'session;' "
            f"AND topic = {p} ORDER BY originator_id, originator_version",
            [topic],
        )
    return [ChainedEvent(o, v, t, bytes(s), c, at) for o, v, t, s, c, at in rows]
