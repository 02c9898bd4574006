"""The plan.json files of one store under one home: written when a session commits, back-filled
in the background, never on a command's path; a failure is a warning, never a failed commit.

The default store writes `<home>/sessions/<id>/plan.json`; any other database writes under
`<home>/stores/<key>/`, `key` = 12 hex chars of the SHA-256 of its URL without the password, so
two databases never overwrite each other's files. A position file per folder records how far
the files follow the views; `repair` compares every file with its view whatever that says.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

from planledger.storage.file_paths import (
    files_lock,
    files_root,
    position_file,
    read_position,
    spawn_back_fill,
    write_position,
)
from planledger.storage.schema import VIEWS
from planledger.storage.settings import DatabaseSettings
from planledger.storage.views import ViewStore
from projections.plan_json import plan_file_is_current, plan_path, write_plan_file
from projections.shapes import PlanView

MAX_WARNINGS = 20
FOLLOW_INTERVAL = 1.0  # seconds: the commits of one interval cost one pass over the files
REPAIR_PAGE = 500  # views held at once by a pass over every file


class PlanFiles:
    def __init__(self, home: Path, database: DatabaseSettings, views: ViewStore) -> None:
        self.database = database
        self.root = files_root(home, database)
        self.views = views
        self.marker = position_file(self.root)
        # The latest failures (bounded); a back-fill that gets through clears them.
        self.warnings: deque[str] = deque(maxlen=MAX_WARNINGS)
        self.written: set[str] = set()
        self.may_spawn = True  # False in the back-fill itself: it never starts another

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

    def sync(self) -> int:
        """Bring every file up to the views; returns how many were written."""
        views_at = self.views.position(VIEWS)
        files_at = read_position(self.marker)
        if files_at >= views_at:
            return 0
        changed = self.views.views_changed_after(files_at)
        for _, view in changed:
            write_plan_file(self.root, view)
        write_position(self.marker, views_at)
        self.warnings.clear()
        return len(changed)

    def repair(
        self, page_size: int = REPAIR_PAGE, on_page: Callable[[int], None] | None = None
    ) -> int:
        """Compare every session's file with its view (read a page at a time, `on_page` told
        each page's size) and rewrite each one missing, stale or edited, whatever the position
        says; returns how many were written. A corrupt session's file is left as `sync` leaves
        it. The position is then the views' (a store replaced under the home included)."""
        views_at = self.views.position(VIEWS)
        written, after = 0, ""
        while page := self.views.views_page(after, page_size):
            for view in page:
                if not plan_file_is_current(self.root, view):
                    write_plan_file(self.root, view)
                    written += 1
            after = page[-1].session_id
            if on_page is not None:
                on_page(len(page))
        write_position(self.marker, views_at)
        self.warnings.clear()
        return written

    def settle(self) -> None:
        """At the end of a command: if the only views that changed since the files' position
        are those this process wrote, move the position; else back-fill in the background."""
        try:
            views_at = self.views.position(VIEWS)
            files_at = read_position(self.marker)
            if files_at >= views_at:
                return
            # One more id than this process wrote is enough to know another session changed
            # (a fresh home over a large store must not read every view on a command's path).
            limit = len(self.written) + 1
            if set(self.views.sessions_changed_after(files_at, limit)) <= self.written:
                write_position(self.marker, views_at)
                return
            if self.may_spawn:
                spawn_back_fill(self.root, self.database)
        except Exception as error:  # never fail a command for its files
            self.warnings.append(f"plan.json files not brought up to date: {error}")


class FilesFollower:
    """For a long-running process: one thread brings the files up (from its start, then after
    commits), off the request path and the live feed's thread. Commits arriving together are
    written in one pass, at most one pass per `interval`, so a busy server does not flush a
    file per commit (the flushes would compete with the database's own). Stopping finishes a
    pass that is due."""

    def __init__(self, files: PlanFiles, interval: float = FOLLOW_INTERVAL) -> None:
        self.files = files
        self.interval = interval
        self._changed = threading.Condition()
        self._due = True  # a fresh home is back-filled
        self._idle = False  # waiting for work (not waiting out an interval)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="plan-files", daemon=True)
        self._thread.start()

    def due(self) -> None:
        """Some view changed: bring the files up soon. Within an interval this only marks the
        pass due (no thread is woken per commit)."""
        with self._changed:
            self._due = True
            if self._idle:
                self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._idle = True
                self._changed.wait_for(lambda: self._due or self._stopping)
                self._idle = False
                if not self._due:
                    return
                self._due = False
                stopping = self._stopping
            try:
                # One pass at a time over a home's files: the processes that share it (each
                # with a follower) take turns, and one that finds a pass running leaves the
                # files to it and looks again after its interval (8 writing processes each
                # writing every commit's file cost more CPU than the commits).
                # The last pass, on stopping, waits its turn (nothing left unwritten).
                with files_lock(self.files.root, wait=stopping) as locked:
                    if locked:
                        self.files.sync()
                if not locked:
                    with self._changed:
                        self._due = True
            except Exception as error:  # never fatal: a warning until a later pass succeeds
                self.files.warnings.append(f"plan.json files not written: {error}")
            if stopping:
                return
            with self._changed:
                self._changed.wait_for(lambda: self._stopping, timeout=self.interval)

    def stop(self) -> None:
        """Finish a pass that is due, then end the thread."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._thread.join(10)
