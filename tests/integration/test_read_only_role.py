"""A database role that may only read (an auditor's, or a standby's connection) opens a
PostgreSQL store that others write: writers store each session's views with its events, so
plans, histories and verify read what they wrote; only the views' position, which the runner
moves, stays where it is, and the commands say so."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from planledger.service import PlanLedger
from tests.conftest import POSTGRES_URL
from tests.integration.test_readers_race import revision_plan


@pytest.fixture
def reader_role() -> Iterator[str]:
    """A login role of its own (dropped afterwards, with what it was granted)."""
    role = f"r_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        yield role
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def as_reader(postgres_url: str, role: str) -> str:
    """`postgres_url` as `role`, granted SELECT on the schema's tables and nothing more."""
    schema = postgres_url.rpartition("=")[2]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    parts = urlsplit(postgres_url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


def test_a_read_only_role_reads_what_writers_stored(
    postgres_url: str, reader_role: str, new_ledger: Callable[[str], PlanLedger]
) -> None:
    writer = new_ledger(postgres_url)
    writer.open_session("audited")
    writer.submit("audited", revision_plan(0))
    writer.submit("audited", revision_plan(1))
    # its catch-up may not write the views' position
    reader = new_ledger(as_reader(postgres_url, reader_role))
    assert reader.plan("audited") == writer.plan("audited")
    assert [e.kind for e in reader.history("audited").entries][-2:] == ["proposed", "committed"]
    assert reader.verify().ok
    assert reader.health().error is None
    (note,) = reader.warnings
    assert "may not write" in note
    writer.catch_up()  # a process that may write moves the position: the feed follows
    assert [e.kind for e in reader.events_after(0, "audited")][-1] == "committed"
