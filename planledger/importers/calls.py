"""One plan call found in a transcript, and the order a session's calls are recorded in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EARLIEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class PlanCall:
    """A plan tool call: its ledger session, its id (the proposal id), its payload in one of the
    ledger's forms, when it was made, and where it was read (for reports).

    `payload` None: the call changed nothing in the agent (it was answered with an error), so it
    is counted and not recorded. `created_task`: the task id a task-form create made (a task is
    created once, whichever hook or import records it). `replay_of`: the ledger sessions whose
    history the line repeats (a Codex fork's copy of its parent's): a call already recorded in
    one of them is not recorded again. `renumbers`: on the deletion that makes room for a task
    Claude Code numbered anew, the call id of the create that reuses the id (the two are
    recorded together or not at all). `parent_session_id` and `cwd` describe the session."""

    session_id: str
    call_id: str
    payload: dict[str, Any] | None
    at: datetime
    path: str
    line: int
    parent_session_id: str | None = None
    cwd: str | None = None
    created_task: str | None = None
    replay_of: tuple[str, ...] = ()
    renumbers: str | None = None


def parse_timestamp(value: Any, fallback: datetime) -> datetime:
    """An ISO 8601 timestamp (naive means UTC); `fallback` when absent or unreadable."""
    if not isinstance(value, str):
        return fallback
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return fallback
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def in_record_order(calls: Iterable[PlanCall]) -> list[PlanCall]:
    """Sorted by timestamp (stable: ties keep file order), each call id kept once (files may
    overlap: the first copy wins)."""
    seen: set[str] = set()
    ordered = []
    for call in sorted(calls, key=lambda c: c.at):
        if call.call_id not in seen:
            seen.add(call.call_id)
            ordered.append(call)
    return ordered


def group_by_session(calls: Iterable[PlanCall]) -> dict[str, list[PlanCall]]:
    sessions: dict[str, list[PlanCall]] = {}
    for call in calls:
        sessions.setdefault(call.session_id, []).append(call)
    return sessions
