"""Direct access to the stored event rows, as an auditor (or an attacker) would have it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg


def _split_postgres(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    schema = parse_qs(parts.query)["schema"][0]
    return url.split("?", 1)[0], schema


def read_state(url: str, originator_id: str, version: int) -> dict[str, Any]:
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
    data: dict[str, Any] = json.loads(bytes(row[0]))
    return data


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
    url: str, originator_id: str, version: int, change: Callable[[dict[str, Any]], None]
) -> None:
    """Rewrite one stored event's JSON in place."""
    data = read_state(url, originator_id, version)
    change(data)
    write_state(url, originator_id, version, json.dumps(data).encode())


def count_events(url: str) -> int:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])
    dsn, schema = _split_postgres(url)
    with psycopg.connect(dsn) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".planledger_events').fetchone()
        assert row is not None
        return int(row[0])


def delete_events(url: str, originator_id: str, *versions: int) -> None:
    """Remove event rows (all of the stream when no version is named)."""
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
