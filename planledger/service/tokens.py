"""Named, scoped tokens of the HTTP server: `read` reads, `write` also proposes and opens,
`admin` does everything. Only each token's SHA-256 is stored; the token itself is shown once,
when it is made. `PLANLEDGER_TOKEN` stays an admin token of its own (named after it)."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import Field

from domain.errors import InvalidInput, TokenExists, TokenNotFound
from domain.models import Model
from planledger.storage.views import ViewStore

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}\Z")
PREFIX = "plt_"
ENV_TOKEN_NAME = "PLANLEDGER_TOKEN"


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


class TokenInfo(Model):
    """A token as `tokens list` shows it (never the token itself)."""

    name: str
    scope: Scope
    created_at: str
    revoked_at: str | None = None


class NewToken(Model):
    name: str
    scope: Scope
    token: str = Field(description="Shown this once: only its hash is kept.")


@dataclass(frozen=True)
class Grant:
    """Who a request's token names, and what it may do."""

    name: str
    scope: Scope

    @property
    def may_write(self) -> bool:
        return self.scope is not Scope.READ


def token_hash(token: str) -> str:
    # A token is 32 random bytes: a plain hash is as hard to invert as a slow one.
    return hashlib.sha256(token.encode()).hexdigest()


def add_token(views: ViewStore, name: str, scope: Scope) -> NewToken:
    if not NAME_PATTERN.match(name) or name == ENV_TOKEN_NAME:
        raise InvalidInput(
            f"invalid token name {name[:80]!r}: use 1-64 characters of A-Za-z0-9._- not "
            f"starting with '.' (and not {ENV_TOKEN_NAME})"
        )
    token = PREFIX + secrets.token_urlsafe(32)
    p = views.placeholder
    if views.read(f"SELECT 1 FROM planledger_tokens WHERE name = {p}", (name,)):
        raise TokenExists(f"a token named {name!r} exists (revoked or not): pick another name")
    try:
        views.write(
            "INSERT INTO planledger_tokens (name, scope, token_hash, created_at) "
            f"VALUES ({p}, {p}, {p}, {p})",
            (name, scope.value, token_hash(token), _now()),
        )
    except Exception as error:  # the same name added at the same moment elsewhere
        if views.read(f"SELECT 1 FROM planledger_tokens WHERE name = {p}", (name,)):
            raise TokenExists(f"a token named {name!r} exists: pick another name") from None
        raise error
    return NewToken(name=name, scope=scope, token=token)


def list_tokens(views: ViewStore) -> list[TokenInfo]:
    rows = views.read(
        "SELECT name, scope, created_at, revoked_at FROM planledger_tokens ORDER BY name"
    )
    return [
        TokenInfo(name=name, scope=Scope(scope), created_at=created, revoked_at=revoked)
        for name, scope, created, revoked in rows
    ]


def revoke_token(views: ViewStore, name: str) -> None:
    p = views.placeholder
    changed = views.write(
        f"UPDATE planledger_tokens SET revoked_at = {p} WHERE name = {p} AND revoked_at IS NULL",
        (_now(), name),
    )
    if not changed:
        raise TokenNotFound(
            f"no token named {name[:80]!r} is in use (see `planledger tokens list`)"
        )


def grant_of(views: ViewStore, token: str) -> Grant | None:
    """The grant of a token in use (None: unknown or revoked)."""
    p = views.placeholder
    rows = views.read(
        f"SELECT name, scope FROM planledger_tokens WHERE token_hash = {p} AND revoked_at IS NULL",
        (token_hash(token),),
    )
    return Grant(rows[0][0], Scope(rows[0][1])) if rows else None


def tokens_in_use(views: ViewStore) -> bool:
    return bool(views.read("SELECT 1 FROM planledger_tokens WHERE revoked_at IS NULL LIMIT 1"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
