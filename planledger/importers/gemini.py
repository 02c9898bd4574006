"""Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/*.jsonl`): `write_todos` calls,
in the ledger session `gemini-<sessionId>` the hooks write too.

A recording is JSON lines: a header (`sessionId`, `projectHash`, `startTime`, `kind`), message
records (`id`, `timestamp`, `type`: `user` | `gemini`, ...), written again under the same `id`
as they grow (a model turn first without, then with its `toolCalls`), and `$set` updates (a
resume or a compression replaces `messages` with the history as it then stands: a replay, not
new calls). Each call of a turn's last record is one call: proposal id `<turn id>-<n>` (the nth
write_todos call of that turn), as the hook names it. A subagent's recording (`kind:
"subagent"`, in `chats/<parent sessionId>/`) is a session of its own, its parent recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from domain.todos import gemini_call_id, gemini_todo_payload
from planledger.importers.calls import EARLIEST, PlanCall, parse_timestamp
from planledger.importers.lines import records
from planledger.importers.report import Errors, LineError

MARKERS = (b'"sessionId"', b'"write_todos"')
TOOL = "write_todos"
REFUSED = "The plan ledger refused"  # a call the hook denied: recorded (rejected) like it


def read_gemini(path: Path, errors: Errors, advance: Callable[[int], None]) -> list[PlanCall]:
    session: str | None = None
    parent: str | None = None
    turns: dict[str, tuple[int, dict[str, Any]]] = {}  # turn id -> (line, its latest record)
    for number, record in records(path, MARKERS, errors, advance):
        if not isinstance(record, dict):
            continue
        if session is None and isinstance(record.get("sessionId"), str) and "kind" in record:
            session = f"gemini-{record['sessionId']}"
            if record["kind"] == "subagent":
                parent = f"gemini-{path.parent.name}"
        turn = record.get("id")
        if record.get("type") == "gemini" and isinstance(turn, str):
            turns[turn] = (number, record)
    if session is None:
        if turns:
            errors.append(LineError(path=str(path), line=1, message="no sessionId header"))
        return []
    calls: list[PlanCall] = []
    for turn, (number, record) in turns.items():
        tool_calls = record.get("toolCalls")
        mine = [c for c in tool_calls or [] if isinstance(c, dict) and c.get("name") == TOOL]
        for index, call in enumerate(mine):
            args = call.get("args")
            todos = args.get("todos") if isinstance(args, dict) else None
            if not isinstance(todos, list):
                message = f"write_todos call {call.get('id')}: args have no todos list"
                errors.append(LineError(path=str(path), line=number, message=message))
                continue
            applied = call.get("status") == "success" or REFUSED in str(call.get("result"))
            at = parse_timestamp(call.get("timestamp") or record.get("timestamp"), EARLIEST)
            calls.append(
                PlanCall(
                    session_id=session,
                    call_id=gemini_call_id(turn, index),
                    payload=gemini_todo_payload(todos) if applied else None,
                    at=at,
                    path=str(path),
                    line=number,
                    parent_session_id=parent,
                )
            )
    return calls


def gemini_config(env: Mapping[str, str], home: Path) -> Path:
    """Gemini CLI's folder: `$GEMINI_CLI_HOME/.gemini`, else `<home>/.gemini` (as 0.61 finds
    it)."""
    return Path(env.get("GEMINI_CLI_HOME") or home) / ".gemini"


def find_recording(config: Path, session_id: str) -> Path | None:
    """The chat recording of Gemini session `session_id` (`tmp/<project>/chats/
    session-<time>-<first 8 characters of the id>.jsonl`, its header naming the session)."""
    for chat in sorted((config / "tmp").glob(f"*/chats/session-*-{session_id[:8]}.json*")):
        if recorded_session(chat) == session_id:
            return chat
    return None


def recorded_session(chat: Path) -> str | None:
    """The `sessionId` of a chat recording's header line (None: unreadable or none)."""
    try:
        with chat.open("rb") as file:
            header = json.loads(file.readline())
    except (OSError, ValueError):
        return None
    session = header.get("sessionId") if isinstance(header, dict) else None
    return session if isinstance(session, str) and session else None
