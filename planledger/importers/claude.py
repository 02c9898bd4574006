"""Claude Code transcripts: `TodoWrite` tool uses, in ledger session `claude-<sessionId>`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from domain.todos import codex_steps
from planledger.importers.calls import EARLIEST, PlanCall, parse_timestamp
from planledger.importers.lines import describe, records
from planledger.importers.report import LineError

MARKERS = (b'"TodoWrite"',)


def session_id(claude_id: str) -> str:
    return f"claude-{claude_id}"


def todos_payload(todos: Sequence[Any]) -> dict[str, Any]:
    """A TodoWrite list in the Codex form: `content` is the step, `status` as is.

    `activeForm`, `id` and `priority` are left out: the Codex form rejects fields it does not
    define, and the ledger has no place for them. A todo that is not an object is passed as it
    is, so the ledger's rules name it."""
    return {"plan": codex_steps(todos)}


def todo_input(tool_input: Any) -> list[Any]:
    """The `todos` list of a TodoWrite input (an object, or its JSON text).

    ValueError names what is wrong when there is no such list."""
    if isinstance(tool_input, str):
        try:
            tool_input = json.loads(tool_input)
        except ValueError as error:
            raise ValueError(f"input is {describe(error)}") from None
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list):
        raise ValueError("input has no `todos` list")
    return todos


def read_claude(
    path: Path, errors: list[LineError], advance: Callable[[int], None]
) -> list[PlanCall]:
    """Every TodoWrite call of one transcript file, each in its line's session."""
    calls: list[PlanCall] = []
    at = EARLIEST
    for number, record in records(path, MARKERS, errors, advance):
        message = record.get("message") if isinstance(record, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == "TodoWrite"
            ):
                continue
            at = parse_timestamp(record.get("timestamp"), at)
            call = _call(block, record, at, path, number)
            if isinstance(call, str):
                errors.append(LineError(path=str(path), line=number, message=call))
            else:
                calls.append(call)
    return calls


def _call(
    block: dict[str, Any], record: dict[str, Any], at: datetime, path: Path, number: int
) -> PlanCall | str:
    """The call of one TodoWrite block, or what is wrong with it."""
    call_id = block.get("id")
    if not isinstance(call_id, str) or not call_id:
        return "TodoWrite call has no id"
    claude_id = record.get("sessionId")
    if not isinstance(claude_id, str) or not claude_id:
        return f"TodoWrite call {call_id} is on a line without a sessionId"
    try:
        todos = todo_input(block.get("input"))
    except ValueError as error:
        return f"TodoWrite call {call_id}: {error}"
    return PlanCall(
        session_id=session_id(claude_id),
        call_id=call_id,
        payload=todos_payload(todos),
        at=at,
        path=str(path),
        line=number,
    )
