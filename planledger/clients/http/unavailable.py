"""A database failure that reaches the HTTP layer unwrapped (a read whose pool found no
connection) is a 503 `storage_unavailable` when the storage cannot be used now, as the CLI's
exit 5 is; anything else stays the 500 it is."""

from __future__ import annotations

import sqlite3

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from domain.errors import StorageUnavailable
from planledger.clients.http.errors import error_response
from planledger.storage.errors import unavailable_cause


def storage_errors() -> tuple[type[Exception], ...]:
    """The exception types a database failure surfaces as past the service."""
    import psycopg
    from eventsourcing.persistence import PersistenceError

    return (PersistenceError, psycopg.Error, sqlite3.Error)


async def storage_unavailable(_: Request, error: Exception) -> JSONResponse:
    cause = unavailable_cause(error)
    if cause is None:
        raise error
    return error_response(503, StorageUnavailable.code, f"storage unavailable: {cause}")


def install_storage_errors(app: FastAPI) -> None:
    for kind in storage_errors():
        app.add_exception_handler(kind, storage_unavailable)
