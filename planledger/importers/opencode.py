"""OpenCode sessions: its database (`$XDG_DATA_HOME/opencode/opencode.db`, read-only) or the
JSON of `opencode export <session>`. Each completed `todowrite` tool part is one call in the
Codex form (`content` → step, `status` as sent; the list as OpenCode stored it), ledger session
`opencode-<sessionID>` (the plugin's), proposal id = the part's `callID`. A part that ended in
an error changed nothing in OpenCode: counted as skipped. A subagent's session (`task`) records
its parent."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from domain.todos import opencode_todo_payload
from planledger.importers.calls import EARLIEST, PlanCall
from planledger.importers.report import Errors, LineError

TOOL = "todowrite"
PREFIX = "opencode"
PATTERNS = ("opencode.db", "*.json")  # what a folder is searched for


def read_opencode(path: Path, errors: Errors, advance: Callable[[int], None]) -> list[PlanCall]:
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            database = file.read(16) == b"SQLite format 3\x00"
    except OSError as error:
        errors.append(LineError(path=str(path), line=0, message=f"cannot read: {error}"))
        return []
    try:
        rows = list(_database_parts(path) if database else _export_parts(path))
    except (sqlite3.Error, OSError, ValueError, RecursionError) as error:
        what = "database" if database else "export"
        message = f"not an OpenCode {what} that can be read: {error}"
        errors.append(LineError(path=str(path), line=0, message=message))
        return []
    finally:
        advance(size)
    calls = []
    for number, (part, session) in enumerate(rows, start=1):
        call = _call(part, session, str(path), number)
        if isinstance(call, str):
            errors.append(LineError(path=str(path), line=number, message=call))
        elif call is not None:
            calls.append(call)
    return calls


Session = dict[str, Any]  # id, parent, cwd


def _database_parts(path: Path) -> Iterator[tuple[dict[str, Any], Session]]:
    """The todowrite parts of every session, read-only (OpenCode keeps writing meanwhile)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        sessions = {
            row[0]: {"id": row[0], "parent": row[1], "cwd": row[2]}
            for row in connection.execute("SELECT id, parent_id, directory FROM session")
        }
        query = "SELECT session_id, data FROM part WHERE data LIKE ? ORDER BY time_created, id"
        for session_id, data in connection.execute(query, (f'%"{TOOL}"%',)):
            part = json.loads(data)
            if isinstance(part, dict):
                yield part, sessions.get(session_id, {"id": session_id})
    finally:
        connection.close()


def _export_parts(path: Path) -> Iterator[tuple[dict[str, Any], Session]]:
    """`opencode export` JSON: `{"info": {session}, "messages": [{"info", "parts"}]}`."""
    exported = json.loads(path.read_text(encoding="utf-8"))
    info = exported.get("info") if isinstance(exported, dict) else None
    if not isinstance(info, dict) or not isinstance(exported.get("messages"), list):
        raise ValueError("no `info` and `messages`")
    session = {"id": info.get("id"), "parent": info.get("parentID"), "cwd": info.get("directory")}
    for message in exported["messages"]:
        for part in (message.get("parts") if isinstance(message, dict) else None) or []:
            if isinstance(part, dict):
                yield part, {**session, "id": part.get("sessionID") or session["id"]}


def _call(part: dict[str, Any], session: Session, path: str, line: int) -> PlanCall | str | None:
    if part.get("type") != "tool" or part.get("tool") != TOOL:
        return None
    call_id, session_id = part.get("callID"), session.get("id")
    if not isinstance(call_id, str) or not call_id or not isinstance(session_id, str):
        return f"{TOOL} part {part.get('id')} has no callID or session"
    state = _object(part.get("state"))
    stored = _object(state.get("metadata")).get("todos")  # the list as OpenCode stored it
    todos = stored if isinstance(stored, list) else _object(state.get("input")).get("todos")
    applied = state.get("status") == "completed"
    if applied and not isinstance(todos, list):
        return f"{TOOL} call {call_id}: no todos list"
    started = _object(state.get("time")).get("start")
    parent = session.get("parent")
    cwd = session.get("cwd")
    return PlanCall(
        session_id=f"{PREFIX}-{session_id}",
        call_id=call_id,
        payload=opencode_todo_payload(todos) if applied and isinstance(todos, list) else None,
        at=_moment(started),
        path=path,
        line=line,
        parent_session_id=f"{PREFIX}-{parent}" if isinstance(parent, str) and parent else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _moment(milliseconds: Any) -> datetime:
    if isinstance(milliseconds, int | float) and not isinstance(milliseconds, bool):
        try:
            return datetime.fromtimestamp(milliseconds / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            pass
    return EARLIEST
