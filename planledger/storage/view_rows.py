"""View changes as table rows and the statements that write them, shared by the runner's
batches and the writers that store views in their events' transaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from projections.commit_views import commit_digest, view_stub
from projections.fold import ViewChanges, empty_view
from projections.shapes import HistoryEntry, PlanView

Row = tuple[Any, ...]
# (aggregate id, version) -> the event's store position (None: the database assigns it) and
# its stored state (None: not at hand).
StoredAt = Callable[[str, int], tuple[int | None, bytes | None]]


@dataclass
class ViewRows:
    """ViewChanges flattened to rows, each with the store position of its event where known
    (None: the database fills it in)."""

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


_ENTRIES = TypeAdapter(list[HistoryEntry])
ENTRY_START = '{"position":'  # every entry's JSON starts so (`position` is its first field)


def entry_texts(entries: Sequence[HistoryEntry]) -> list[str]:
    """Each entry's JSON as its history row keeps it (`model_dump_json(by_alias=True,
    exclude_none=True)`: nulls are defaults), made in one call for them all and cut at the
    starts of its items: a call per entry cost half as much again (21.1k instructions an
    entry of the bulk bench's store, against 14.0k: pydantic sets up each call). A start can
    only be cut where an item begins (a quote inside a string is escaped) or where a nested
    object has a `position` key of its own: then more texts than entries come out, and each
    entry is made alone."""
    if len(entries) > 1:  # (one alone: nothing to cut)
        text = _ENTRIES.dump_json(list(entries), by_alias=True, exclude_none=True).decode()
        pieces = text[1:-1].split("," + ENTRY_START)
        if len(pieces) == len(entries):
            return [pieces[0], *[ENTRY_START + piece for piece in pieces[1:]]]
    return [entry.model_dump_json(by_alias=True, exclude_none=True) for entry in entries]


def rows_of(changes: ViewChanges, stored: StoredAt) -> ViewRows:
    """`stored(aggregate_id, version)` names the store position and state of an event: a
    commit's history row keeps its view without the plan, and a digest of the state that the
    plan is read back from (projections.commit_views)."""
    rows = ViewRows()
    dumped: dict[int, str] = {}  # a view written for its session and by a later batch row

    def view_json(view: PlanView) -> str:
        text = dumped.get(id(view))
        if text is None:
            text = dumped[id(view)] = view.model_dump_json()
        return text

    for session_id, (version, view) in changes.views.items():
        position = stored(f"plan:{session_id}", version)[0]
        rows.views.append((session_id, version, position, view.revision, view_json(view)))
    for session_id, error in changes.corrupt.items():
        mark = {"rule": error.rule, "position": error.position, "message": error.detail}
        # The store position of the event that broke: in the plan's stream, or in the
        # session's (whose events are folded too; the plan's beside it may be in their views
        # already, and not in this run).
        position = (
            stored(f"plan:{session_id}", error.position)[0]
            or stored(f"session:{session_id}", error.position)[0]
        )
        empty = empty_view(session_id, None).model_dump_json()
        rows.corrupt.append((session_id, error.position, position, empty, json.dumps(mark)))
    texts = entry_texts([row.entry for row in changes.history])
    for row, text in zip(changes.history, texts, strict=True):
        entry = row.entry
        position, stub, digest = row.notification_id, None, None
        if position is None or row.shown is not None:
            at, state = stored(f"plan:{row.session_id}", entry.position)
            position = at if position is None else position
            if row.shown is not None:
                assert state is not None, "a commit's history row needs its stored state"
                stub, digest = view_stub(row.session_id, row.shown), commit_digest(state)
        rows.history.append(
            (
                row.session_id,
                entry.position,
                position,
                entry.kind,
                entry.revision,
                text,
                stub,
                digest,
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


def columns(rows: Sequence[Sequence[Any]], width: int = 0) -> list[list[Any]]:
    """Rows as one list per column (`width` empty lists when there are no rows): how
    PostgreSQL takes many rows in one statement of a fixed text (`unnest` of arrays)."""
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width


def upsert_view(p: str) -> str:
    return (
        "INSERT INTO planledger_plan_views (session_id, version, position, revision, view) "
        f"VALUES ({p}, {p}, {p}, {p}, {p}) ON CONFLICT (session_id) DO UPDATE SET "
        "version = excluded.version, position = excluded.position, "
        "revision = excluded.revision, view = excluded.view "
        "WHERE planledger_plan_views.version < excluded.version"
    )


def mark_corrupt(p: str) -> str:
    """A corrupt session keeps its last good view; a session with none gets an empty one."""
    return (
        "INSERT INTO planledger_plan_views (session_id, version, position, revision, view, "
        f"corrupt) VALUES ({p}, {p}, {p}, 0, {p}, {p}) ON CONFLICT (session_id) DO UPDATE SET "
        "corrupt = excluded.corrupt, position = excluded.position"
    )


HISTORY_COLUMNS = "session_id, position, notification_id, kind, revision, entry, view, digest"


def insert_history(p: str) -> str:
    return f"INSERT INTO planledger_plan_history ({HISTORY_COLUMNS}) VALUES ({', '.join([p] * 8)})"


COPY_HISTORY = f"COPY planledger_plan_history ({HISTORY_COLUMNS}) FROM STDIN"


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
