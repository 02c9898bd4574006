"""Where a store's plan.json files live under a home, and the background back-fill (light:
the fast `plan show` uses it without the service)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from planledger.storage.settings import DatabaseSettings


def store_key(url: str) -> str:
    """12 hex chars of the SHA-256 of the URL without its password."""
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=f"{parts.username or ''}@{host}")
    return hashlib.sha256(urlunsplit(parts).encode()).hexdigest()[:12]


def files_root(home: Path, database: DatabaseSettings) -> Path:
    """`home` for the default store (SQLite at <home>/ledger.sqlite3), else its own folder."""
    default = home / "ledger.sqlite3"
    path = database.env.get("SQLITE_DBNAME")
    if path is not None and Path(path).resolve() == default.resolve():
        return home
    return home / "stores" / store_key(database.url)


def tracking_name(root: Path) -> str:
    """The tracking row of the files under `root` (how far they follow the views)."""
    return f"plan_json:{root.resolve()}"


def spawn_back_fill(root: Path, database: DatabaseSettings) -> None:
    """`planledger projections sync-files` as a detached background process."""
    with contextlib.suppress(OSError):
        root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PLANLEDGER_DATABASE_URL": database.url}
    subprocess.Popen(
        [sys.executable, "-m", "planledger.clients.entry", "projections", "sync-files"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
