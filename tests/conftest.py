"""Shared fixtures. PostgreSQL is required: an unreachable database fails the run, never skips."""

from __future__ import annotations

import compileall
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from planledger.service import PlanLedger, open_planledger

POSTGRES_URL = os.environ.get(
    "PLANLEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The CLI processes the tests start read our bytecode from its cache, as an installed CLI
    does (under PYTHONDONTWRITEBYTECODE, set on some machines, each would compile every module
    of ours anew: ~50 ms a process)."""
    root = Path(__file__).resolve().parent.parent
    for package in ("domain", "projections", "planledger"):
        compileall.compile_dir(root / package, quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: three workers for two cores. Much of a test's time is spent waiting for the
    processes it starts (CLI commands, servers, the agents' binaries) and for PostgreSQL: on a
    2-core machine the suite took 460 s with 2 workers and 334-343 s with 4, where a fresh
    PostgreSQL connection once took longer than the product's 1 s pool timeout."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


def _admin_connection() -> psycopg.Connection:
    try:
        return psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        pytest.fail(
            f"PostgreSQL is required for the test suite and is unreachable at {POSTGRES_URL} "
            f"(set PLANLEDGER_TEST_POSTGRES_URL): {error}",
            pytrace=False,
        )


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose tables live in a fresh schema, dropped afterwards."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with _admin_connection() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{POSTGRES_URL}?schema={schema}"
    finally:
        with _admin_connection() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.sqlite3'}"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """The contract suite runs once on each database."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(fixture))


@pytest.fixture
def new_ledger() -> Iterator[Callable[[str], PlanLedger]]:
    """Open services (each with its own connections, like another process), closed after."""
    opened: list[PlanLedger] = []

    def make(url: str) -> PlanLedger:
        opened.append(open_planledger(url, home=None))
        return opened[-1]

    yield make
    for ledger in opened:
        ledger.close()


@pytest.fixture
def reader_role() -> Iterator[str]:
    """A login role of its own (dropped afterwards, with what it was granted)."""
    role = f"r_{uuid.uuid4().hex[:10]}"
    with _admin_connection() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        yield role
    finally:
        with _admin_connection() as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def as_reader(postgres_url: str, role: str) -> str:
    """`postgres_url` as `role`, granted SELECT on the schema's tables and nothing more."""
    schema = postgres_url.rpartition("=")[2]
    with _admin_connection() as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    parts = urlsplit(postgres_url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))
