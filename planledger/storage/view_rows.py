"""View changes as table rows and the statements that write them, shared by the runner's
batches and the writers that store views in their events' transaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from projections.fold import ViewChanges, empty_view
from projections.shapes import PlanView

Row = tuple[Any, ...]


@dataclass
class ViewRows:
    """ViewChanges flattened to rows; `positions` maps (session_id, stream position) to the
    store position where known (None: the database fills it in)."""

    views: list[Row] = field(default_factory=list)
    corrupt: list[Row] = field(default_factory=list)
    history: list[Row] = field(default_factory=list)
    sessions: list[Row] = field(default_factory=list)

    @classmethod
    def joined(cls, parts: Sequence[ViewRows]) -> ViewRows:
        """The rows of every part (each about sessions of its own)."""
        rows = cls()
        for part in parts:
            rows.views += part.views
            rows.corrupt += part.corrupt
            rows.history += part.history
            rows.sessions += part.sessions
        return rows


def rows_of(changes: ViewChanges, store_position: Callable[[str, int], int | None]) -> ViewRows:
    """`store_position(aggregate_id, version)` names the store position of an event."""
    rows = ViewRows()
    dumped: dict[int, str] = {}  # a commit's view is both its session's view and in its history

    def view_json(view: PlanView) -> str:
        text = dumped.get(id(view))
        if text is None:
            text = dumped[id(view)] = view.model_dump_json()
        return text

    for session_id, (version, view) in changes.views.items():
        position = store_position(f"plan:{session_id}", version)
        rows.views.append((session_id, version, position, view.revision, view_json(view)))
    for session_id, error in changes.corrupt.items():
        mark = {"rule": error.rule, "position": error.position, "message": error.detail}
        position = store_position(f"plan:{session_id}", error.position)
        empty = empty_view(session_id, None).model_dump_json()
        rows.corrupt.append((session_id, error.position, position, empty, json.dumps(mark)))
    for row in changes.history:
        entry = row.entry
        position = row.notification_id
        if position is None:
            position = store_position(f"plan:{row.session_id}", entry.position)
        rows.history.append(
            (
                row.session_id,
                entry.position,
                position,
                entry.kind,
                entry.revision,
                entry.model_dump_json(by_alias=True),
                view_json(row.view) if row.view is not None else None,
            )
        )
    for session in changes.sessions.values():
        rows.sessions.append(
            (
                session.session_id,
                session.version,
                session.mode,
                session.opened_at.isoformat(),
                session.at.isoformat(),
                session.source,
                session.parent_session_id,
                session.cwd,
            )
        )
    return rows


def upsert_view(p: str) -> str:
    return (
        "INSERT INTO planledger_plan_views (session_id, version, position, revision, view) "
        f"VALUES ({p}, {p}, {p}, {p}, {p}) ON CONFLICT (session_id) DO UPDATE SET "
        "version = excluded.version, position = excluded.position, "
        "revision = excluded.revision, view = excluded.view"
    )


def mark_corrupt(p: str) -> str:
    """A corrupt session keeps its last good view; a session with none gets an empty one."""
    return (
        "INSERT INTO planledger_plan_views (session_id, version, position, revision, view, "
        f"corrupt) VALUES ({p}, {p}, {p}, 0, {p}, {p}) ON CONFLICT (session_id) DO UPDATE SET "
        "corrupt = excluded.corrupt, position = excluded.position"
    )


def insert_history(p: str) -> str:
    return (
        "INSERT INTO planledger_plan_history "
        "(session_id, position, notification_id, kind, revision, entry, view) "
        f"VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})"
    )


COPY_HISTORY = (
    "COPY planledger_plan_history "
    "(session_id, position, notification_id, kind, revision, entry, view) FROM STDIN"
)


SESSION_COLUMNS = "session_id, version, mode, opened_at, updated_at, source, parent_session_id, cwd"


def upsert_session(p: str) -> str:
    return (
        f"INSERT INTO planledger_sessions ({SESSION_COLUMNS}) "
        f"VALUES ({', '.join([p] * 8)}) ON CONFLICT (session_id) DO UPDATE SET "
        "version = excluded.version, mode = excluded.mode, updated_at = excluded.updated_at "
        "WHERE planledger_sessions.version < excluded.version"
    )


def write_rows(
    executemany: Callable[[str, Sequence[Row]], None], rows: ViewRows, placeholder: str
) -> None:
    """Every row, with one statement per table (the caller holds the transaction)."""
    if rows.views:
        executemany(upsert_view(placeholder), rows.views)
    if rows.corrupt:
        executemany(mark_corrupt(placeholder), rows.corrupt)
    if rows.history:
        executemany(insert_history(placeholder), rows.history)
    if rows.sessions:
        executemany(upsert_session(placeholder), rows.sessions)
