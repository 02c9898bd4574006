"""Named tokens on both databases: shown once, stored only as a hash, one name each, refused
once revoked."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import psycopg
import pytest

from domain.errors import InvalidInput, TokenExists, TokenNotFound
from planledger.service import PlanLedger, open_planledger
from planledger.service.tokens import Scope


@pytest.fixture
def service(database_url: str) -> Iterator[PlanLedger]:
    with open_planledger(database_url, home=None) as opened:
        yield opened


def stored_rows(url: str) -> list[tuple[object, ...]]:
    sql = "SELECT name, scope, token_hash, created_at, revoked_at FROM {}planledger_tokens"
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute(sql.format("")).fetchall()
    dsn, schema = url.split("?schema=")
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql.format(f'"{schema}".')).fetchall()


def test_a_token_is_stored_only_as_its_hash_and_refused_once_revoked(
    service: PlanLedger, database_url: str
) -> None:
    assert not service.tokens_in_use()
    made = service.add_token("ci-bot", "write")
    assert made.token.startswith("plt_") and len(made.token) > 40
    (row,) = stored_rows(database_url)
    assert made.token not in {str(value) for value in row}  # never the token itself
    assert row[:2] == ("ci-bot", "write")
    grant = service.grant_of(made.token)
    assert grant is not None and (grant.name, grant.scope) == ("ci-bot", Scope.WRITE)
    assert service.grant_of(made.token + "x") is None
    assert service.tokens_in_use()
    with pytest.raises(TokenExists):
        service.add_token("ci-bot", "read")
    with pytest.raises(InvalidInput):
        service.add_token("no spaces", "read")
    service.revoke_token("ci-bot")
    assert service.grant_of(made.token) is None and not service.tokens_in_use()
    with pytest.raises(TokenNotFound):
        service.revoke_token("ci-bot")
    ((info),) = service.tokens()
    assert info.name == "ci-bot" and info.revoked_at is not None
