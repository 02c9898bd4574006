"""The view store of a database: SQLite's or PostgreSQL's (psycopg imported only for the latter)."""

from __future__ import annotations

from planledger.storage.settings import DatabaseSettings
from planledger.storage.views import SqliteViewStore, ViewStore


def open_store(database: DatabaseSettings) -> ViewStore:
    """The view store of a database whose schema is set up (see planledger.storage.schema)."""
    if database.is_postgres:
        from planledger.storage.postgres_views import PostgresViewStore

        return PostgresViewStore(database)
    return SqliteViewStore(database)
