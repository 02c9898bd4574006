"""Where a store's plan.json files live under a home, and the background back-fill (light:
the fast `plan show` uses it without the service)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from planledger.storage.settings import DatabaseSettings

BACK_FILL_GAP_SECONDS = 5.0


def store_key(url: str) -> str:
    """12 hex chars of the SHA-256 of the URL without its password."""
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=f"{parts.username or ''}@{host}")
    return hashlib.sha256(urlunsplit(parts).encode()).hexdigest()[:12]


def resolved_url(database: DatabaseSettings) -> str:
    """The URL that names one store wherever it is given from: a SQLite file by its absolute
    path (`sqlite:///ledger.db` names another file in each working folder)."""
    path = database.env.get("SQLITE_DBNAME")
    if path is None or path == ":memory:":
        return database.url
    return f"sqlite:///{Path(path).resolve()}"


def files_root(home: Path, database: DatabaseSettings) -> Path:
    """`home` for the default store (SQLite at <home>/ledger.sqlite3), else its own folder,
    keyed by the store's resolved URL."""
    default = home / "ledger.sqlite3"
    path = database.env.get("SQLITE_DBNAME")
    if path is not None and Path(path).resolve() == default.resolve():
        return home
    return home / "stores" / store_key(resolved_url(database))


def position_file(root: Path) -> Path:
    """Where the files under `root` record the store position they follow the views to (with
    the files, not in the database: keeping it is no write to the store)."""
    return root / ".plan-files-position"


def read_position(marker: Path) -> int:
    try:
        text = marker.read_text().strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def write_position(marker: Path, position: int) -> None:
    """Atomically (a temporary file renamed); a failure is the caller's warning."""
    marker.parent.mkdir(parents=True, exist_ok=True)
    temporary = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
    temporary.write_text(f"{position}\n")
    os.replace(temporary, marker)


@contextmanager
def files_lock(root: Path, wait: bool) -> Iterator[bool]:
    """Hold the lock of one pass over the files under `root` (True), or, without `wait`, give
    up at once while another pass holds it (False)."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with (root / ".sync.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


def spawn_back_fill(root: Path, database: DatabaseSettings) -> None:
    """`planledger projections sync-files --changed` (the views changed since the files'
    position) as a detached background process, unless one was started moments ago (commands
    that close together start one, not a herd)."""
    started = root / ".sync.started"
    try:
        if time.time() - started.stat().st_mtime < BACK_FILL_GAP_SECONDS:
            return
    except OSError:
        pass
    try:
        root.mkdir(parents=True, exist_ok=True)
        started.touch()
    except OSError:
        return  # a home it cannot write to: a back-fill could not write either
    env = {**os.environ, "PLANLEDGER_DATABASE_URL": database.url}
    command = ["projections", "sync-files", "--changed"]
    subprocess.Popen(
        # -P: never import from the caller's folder (a project's own `domain` package)
        [sys.executable, "-P", "-m", "planledger.clients.entry", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
