"""The one storage setting: PLANLEDGER_DATABASE_URL (or --database), turned into library env."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from domain.errors import LedgerError

DEFAULT_HOME = Path("~/.local/share/planledger")
# Our recorders (views stored with their events), each imported only for its database.
SQLITE_RECORDER = "planledger.storage.sqlite_recorder:ViewsSQLiteRecorder"
POSTGRES_RECORDER = "planledger.storage.postgres_recorder:ViewsPostgresRecorder"
POSTGRES_FACTORY = "planledger.storage.postgres_factory:BoundedPostgresFactory"
# A lost PostgreSQL server is "storage unavailable" within about 3 s, never a wait: a call
# waits POOL_TIMEOUT seconds for a pooled connection (a command may wait twice), a connection
# attempt gives up after CONNECT_TIMEOUT (libpq's, whole seconds), and a pool's own attempts to
# reconnect give up as soon, so the first call after the server is back connects.
POOL_TIMEOUT = 1.0
CONNECT_TIMEOUT = 2
POOL_SIZE, POOL_MAX = 1, 10  # a process's pooled connections to the event store


class SettingsError(LedgerError):
    """The database setting cannot be used as written."""

    code = "invalid_database_url"


def home_dir() -> Path:
    """PLANLEDGER_HOME, or ~/.local/share/planledger."""
    return Path(os.environ.get("PLANLEDGER_HOME") or DEFAULT_HOME).expanduser()


def default_database_url() -> str:
    return f"sqlite:///{home_dir() / 'ledger.sqlite3'}"


@dataclass(frozen=True)
class DatabaseSettings:
    """Where the events live, as the environment the `eventsourcing` library reads."""

    url: str
    env: dict[str, str]

    @property
    def is_postgres(self) -> bool:
        return self.env["PERSISTENCE_MODULE"] == POSTGRES_FACTORY

    @property
    def display_url(self) -> str:
        """The URL with any password hidden, for messages."""
        parts = urlsplit(self.url)
        if parts.password:
            return self.url.replace(f":{parts.password}@", ":***@", 1)
        return self.url


def resolve_database_url(explicit: str | None = None) -> str:
    return explicit or os.environ.get("PLANLEDGER_DATABASE_URL") or default_database_url()


def database_settings(url: str | None = None) -> DatabaseSettings:
    """Parse `sqlite:///relative`, `sqlite:////absolute` or `postgresql://user[:pw]@host:port/db`.

    A PostgreSQL URL may carry `?schema=NAME` to keep the ledger's tables in their own schema.
    """
    url = resolve_database_url(url)
    # Tables are set up once per database by planledger.storage.schema, never on every start.
    common = {"ORIGINATOR_ID_TYPE": "text", "CREATE_TABLE": "n"}
    if url.startswith("sqlite://"):
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        if not path:
            raise SettingsError(
                f"cannot use database URL {url!r}: write sqlite:///relative/path or "
                "sqlite:////absolute/path"
            )
        if path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            path = str(Path(path).expanduser())
        return DatabaseSettings(
            url,
            {
                **common,
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": path,
                # A lock held past this is "storage unavailable" (exit 5), well within 3 s.
                "SQLITE_LOCK_TIMEOUT": "2",
                "APPLICATION_RECORDER_TOPIC": SQLITE_RECORDER,
            },
        )
    if url.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(url)
        dbname = parts.path.lstrip("/")
        if not parts.hostname or not dbname or not parts.username:
            raise SettingsError(
                f"cannot use database URL {url!r}: write postgresql://user[:password]@host:port/db"
            )
        try:
            port = parts.port or 5432
        except ValueError as error:
            raise SettingsError(f"cannot use database URL {url!r}: {error}") from None
        env = {
            **common,
            "PERSISTENCE_MODULE": POSTGRES_FACTORY,
            "POSTGRES_DBNAME": dbname,
            "POSTGRES_HOST": parts.hostname,
            "POSTGRES_PORT": str(port),
            "POSTGRES_USER": unquote(parts.username),
            # The library insists on a password even under trust authentication.
            "POSTGRES_PASSWORD": unquote(parts.password or ""),
            "POSTGRES_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT),
            # One connection made at start, more only while calls overlap (the library's
            # default opens five at once: a one-shot command waits for them, and sixteen
            # writer processes on one machine fill a server's 100 connections).
            "POSTGRES_POOL_SIZE": str(POOL_SIZE),
            "POSTGRES_MAX_OVERFLOW": str(POOL_MAX - POOL_SIZE),
            "APPLICATION_RECORDER_TOPIC": POSTGRES_RECORDER,
        }
        schema = parse_qs(parts.query).get("schema")
        if schema:
            env["POSTGRES_SCHEMA"] = schema[0]
        return DatabaseSettings(url, env)
    raise SettingsError(
        f"unsupported database URL {url!r}: use sqlite:///path or "
        "postgresql://user[:password]@host:port/db"
    )


def patient(settings: DatabaseSettings, seconds: int) -> DatabaseSettings:
    """`settings` with SQLite's write lock waited for up to `seconds` (PostgreSQL's as they
    are): for the writers of one bulk import, who wait for each other's transactions."""
    if settings.is_postgres:
        return settings
    return DatabaseSettings(settings.url, {**settings.env, "SQLITE_LOCK_TIMEOUT": str(seconds)})


def postgres_conninfo(settings: DatabaseSettings) -> str:
    """The libpq connection string of a PostgreSQL setting (tables in its schema)."""
    from psycopg.conninfo import make_conninfo

    env = settings.env
    schema = env.get("POSTGRES_SCHEMA", "public")
    return make_conninfo(
        host=env["POSTGRES_HOST"],
        port=env["POSTGRES_PORT"],
        dbname=env["POSTGRES_DBNAME"],
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"] or None,
        connect_timeout=env.get("POSTGRES_CONNECT_TIMEOUT", str(CONNECT_TIMEOUT)),
        options=f"-c search_path={schema}",
    )
