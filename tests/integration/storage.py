"""Direct access to the stored event rows, as an auditor (or an attacker) would have it.

An edit through these helpers chains the stream again by default (`rechain`), as a history
rewritten by someone who knows the chain's formula would be: only the plan rules can catch it
then. `rechain=False` leaves the chain as the ledger wrote it, for the chain to catch."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from domain.chain import GENESIS, link
from domain.errors import CorruptHistory
from planledger.storage.views import ViewStore

SETTLE_WAIT = 20.0  # seconds another test's transaction may hold the horizon back


def settled(views: ViewStore) -> int:
    """Wait until every event committed so far is one a reader of the store's order may pass
    (on PostgreSQL a transaction in flight anywhere on the server, another test's, holds the
    horizon back); the last position."""
    deadline = time.monotonic() + SETTLE_WAIT
    while (reached := views.max_notification_id()) < views.last_committed():
        assert time.monotonic() < deadline, f"held back: {views.horizon_holders(0)}"
        time.sleep(0.005)
    return reached


def corrupt_at(read: Callable[[], object]) -> tuple[int, str]:
    """(position, rule) of the CorruptHistory that `read` must raise."""
    with pytest.raises(CorruptHistory) as caught:
        read()
    return caught.value.position, caught.value.rule


def _split_postgres(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    return url.split("?", 1)[0], schema


def read_state(url: str, originator_id: str, version: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_raw(url, originator_id, version))
    return data


def read_raw(url: str, originator_id: str, version: int) -> bytes:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            row = conn.execute(
                "SELECT state FROM stored_events WHERE originator_id=? AND originator_version=?",
                (originator_id, version),
            ).fetchone()
    else:
        dsn, schema = _split_postgres(url)
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                f'SELECT state FROM "{schema}".planledger_events '
                "WHERE originator_id=%s AND originator_version=%s",
                (originator_id, version),
            ).fetchone()
    assert row is not None, f"no event {originator_id} #{version}"
    return bytes(row[0])


def write_state(url: str, originator_id: str, version: int, state: bytes) -> None:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            updated = conn.execute(
                "UPDATE stored_events SET state=? WHERE originator_id=? AND originator_version=?",
                (state, originator_id, version),
            ).rowcount
    else:
        dsn, schema = _split_postgres(url)
        with psycopg.connect(dsn) as conn:
            updated = conn.execute(
                f'UPDATE "{schema}".planledger_events SET state=%s '
                "WHERE originator_id=%s AND originator_version=%s",
                (state, originator_id, version),
            ).rowcount
    assert updated == 1


def edit_event(
    url: str,
    originator_id: str,
    version: int,
    change: Callable[[dict[str, Any]], None],
    rechain: bool = True,
) -> None:
    """Rewrite one stored event's JSON in place."""
    data = read_state(url, originator_id, version)
    change(data)
    write_state(url, originator_id, version, json.dumps(data).encode())
    if rechain:
        chain_again(url, originator_id)


def chain_again(url: str, originator_id: str) -> None:
    """Compute every chain of the stream again, in version order, over its rows as they are."""
    select = "SELECT originator_version, topic, state FROM {} WHERE originator_id={} "
    select += "ORDER BY originator_version"
    update = "UPDATE {} SET chain={p} WHERE originator_id={p} AND originator_version={p}"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute(select.format("stored_events", "?"), (originator_id,)).fetchall()
            conn.executemany(update.format("stored_events", p="?"), _chains(originator_id, rows))
        return
    dsn, schema = _split_postgres(url)
    table = f'"{schema}".planledger_events'
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(select.format(table, "%s"), (originator_id,)).fetchall()
        conn.cursor().executemany(update.format(table, p="%s"), _chains(originator_id, rows))


def _chains(originator_id: str, rows: list[Any]) -> list[tuple[str, str, int]]:
    previous, chains = GENESIS, []
    for version, topic, state in rows:
        previous = link(previous, topic, originator_id, version, bytes(state))
        chains.append((previous, originator_id, version))
    return chains


def count_events(url: str) -> int:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])
    dsn, schema = _split_postgres(url)
    with psycopg.connect(dsn) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".planledger_events').fetchone()
        assert row is not None
        return int(row[0])


def delete_events(url: str, originator_id: str, *versions: int, rechain: bool = True) -> None:
    """Remove event rows (all of the stream when no version is named)."""
    _delete(url, originator_id, *versions)
    if rechain and versions:
        chain_again(url, originator_id)


def _delete(url: str, originator_id: str, *versions: int) -> None:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            if versions:
                for version in versions:
                    conn.execute(
                        "DELETE FROM stored_events WHERE originator_id=? AND originator_version=?",
                        (originator_id, version),
                    )
            else:
                conn.execute("DELETE FROM stored_events WHERE originator_id=?", (originator_id,))
        return
    dsn, schema = _split_postgres(url)
    with psycopg.connect(dsn) as conn:
        table = f'"{schema}".planledger_events'
        if versions:
            for version in versions:
                conn.execute(
                    f"DELETE FROM {table} WHERE originator_id=%s AND originator_version=%s",
                    (originator_id, version),
                )
        else:
            conn.execute(f"DELETE FROM {table} WHERE originator_id=%s", (originator_id,))


def execute_sql(url: str, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Statements written with `{t}` for the events table and `?` for parameters, in one
    transaction."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            for sql, params in statements:
                conn.execute(sql.format(t="stored_events"), params)
        return
    dsn, schema = _split_postgres(url)
    with psycopg.connect(dsn) as conn:
        for sql, params in statements:
            conn.execute(sql.format(t=f'"{schema}".planledger_events').replace("?", "%s"), params)


def swap_states(url: str, originator_id: str, first: int, second: int) -> None:
    """Swap two events' stored states (their chains stay where they were)."""
    one, other = (read_raw(url, originator_id, version) for version in (first, second))
    where = " WHERE originator_id=? AND originator_version=?"
    execute_sql(
        url,
        [
            ("UPDATE {t} SET state=?" + where, (other, originator_id, first)),
            ("UPDATE {t} SET state=?" + where, (one, originator_id, second)),
        ],
    )


def insert_before(
    url: str, originator_id: str, version: int, topic: str, state: bytes, chain: str | None
) -> None:
    """Insert an event at `version`, the stream's later events moved one on (as SQL would)."""
    later = " WHERE originator_id=? AND originator_version>=?"
    execute_sql(
        url,
        [  # (through a range no event has: the key is checked row by row)
            (
                "UPDATE {t} SET originator_version=originator_version+1000000" + later,
                (originator_id, version),
            ),
            (
                "UPDATE {t} SET originator_version=originator_version-999999" + later,
                (originator_id, version + 1000000),
            ),
            (
                "INSERT INTO {t} (originator_id, originator_version, topic, state, chain) "
                "VALUES (?, ?, ?, ?, ?)",
                (originator_id, version, topic, state, chain),
            ),
        ],
    )
