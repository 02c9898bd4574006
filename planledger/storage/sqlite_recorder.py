"""The SQLite write path: the library's insert, plus the views in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from planledger.storage.recorder import InlineViews
from planledger.storage.schema import VIEWS
from planledger.storage.view_rows import rows_of, write_rows


class ViewsSQLiteRecorder(SQLiteApplicationRecorder):
    """The library's SQLite insert, plus the views in the same transaction when current."""

    def _insert_events(
        self,
        c: SQLiteCursor,
        stored_events: Sequence[StoredEvent],
        *,
        views: InlineViews | None = None,
        **kwargs: Any,
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        if views is None or not ids:
            return ids
        # The insert took the write lock: nobody else moves the views until we commit.
        c.execute(
            "SELECT (SELECT position FROM planledger_tracking WHERE projection = ?), "
            f"(SELECT COALESCE(MAX(rowid), 0) FROM {self.events_table_name} WHERE rowid < ?)",
            (VIEWS, ids[0]),
        )
        tracked, before = c.fetchone()
        if tracked != before:
            return ids  # the views are behind: the runner will bring them up
        stored = {
            (str(event.originator_id), event.originator_version): (notification_id, event.state)
            for event, notification_id in zip(stored_events, ids, strict=True)
        }
        rows = rows_of(views.changes, lambda *key: stored.get(key, (None, None)))
        write_rows(c.executemany, rows, "?")
        c.execute(
            "UPDATE planledger_tracking SET position = ? WHERE projection = ?", (max(ids), VIEWS)
        )
        views.applied = True
        return ids
