"""The plan.json files of one store under one home: written when a session commits, back-filled
in the background, never on a command's path; a failure is a warning, never a failed commit.

The default store writes `<home>/sessions/<id>/plan.json`; any other database writes under
`<home>/stores/<key>/`, `key` = 12 hex chars of the SHA-256 of its URL without the password, so
two databases never overwrite each other's files. A tracking row per folder records how far the
files follow the views.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from planledger.storage.settings import DatabaseSettings
from planledger.storage.views import ViewStore
from projections.plan_json import plan_path, write_plan_file
from projections.runner import VIEWS
from projections.shapes import PlanView


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


class PlanFiles:
    def __init__(self, home: Path, database: DatabaseSettings, views: ViewStore) -> None:
        self.database = database
        self.root = files_root(home, database)
        self.views = views
        self.tracking = f"plan_json:{self.root.resolve()}"
        self.warnings: list[str] = []
        self.written: set[str] = set()

    def path(self, session_id: str) -> Path:
        return plan_path(self.root, session_id)

    def write(self, view: PlanView) -> None:
        """Write one session's file now (after its commit); a failure becomes a warning."""
        try:
            write_plan_file(self.root, view)
        except OSError as error:
            self.warnings.append(f"plan.json of {view.session_id!r} not written: {error}")
        else:
            self.written.add(view.session_id)

    def behind(self) -> bool:
        return self.views.position(self.tracking) < self.views.position(VIEWS)

    def sync(self) -> int:
        """Bring every file up to the views; returns how many were written."""
        views_at = self.views.position(VIEWS)
        files_at = self.views.position(self.tracking)
        if files_at >= views_at:
            return 0
        changed = self.views.views_changed_after(files_at)
        for _, view in changed:
            write_plan_file(self.root, view)
        self.views.set_position(self.tracking, views_at)
        return len(changed)

    def settle(self) -> None:
        """At the end of a command: if the only views that changed since the files' position
        are those this process wrote, move the position; else back-fill in the background."""
        try:
            views_at = self.views.position(VIEWS)
            files_at = self.views.position(self.tracking)
            if files_at >= views_at:
                return
            changed = {sid for sid, _ in self.views.views_changed_after(files_at)}
            if changed <= self.written:
                self.views.set_position(self.tracking, views_at)
                return
            self.spawn_sync()
        except Exception as error:  # never fail a command for its files
            self.warnings.append(f"plan.json files not brought up to date: {error}")

    def spawn_sync(self) -> None:
        """`planledger projections sync-files` as a detached background process."""
        with contextlib.suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PLANLEDGER_DATABASE_URL": self.database.url}
        subprocess.Popen(
            [sys.executable, "-m", "planledger.clients.cli", "projections", "sync-files"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
