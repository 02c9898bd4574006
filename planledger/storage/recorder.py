"""The views a save changes, handed to the recorder to store with its events.

While the views are up to date, the writer stores its events' view rows and history rows in the
same transaction as the events: a reader that sees the events sees their views, on every server.
Up to date means, on SQLite, that the tracking position is the last event before ours (the
writer moves it too); on PostgreSQL, that each session's view is at the event before its first
one here (per session: the runner alone moves the tracking position). When the views are behind
(a rebuild, a schema change), the events are stored alone and the projection runner catches the
views up; `InlineViews.applied` tells the caller which happened.
The recorders: `postgres_recorder` and `sqlite_recorder` (each imported only for its database).
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.fold import ViewChanges


@dataclass
class InlineViews:
    """The views a save changes; `applied` is set once they were stored with the events."""

    changes: ViewChanges
    applied: bool = False
