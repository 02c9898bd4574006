"""OpenCode behind the proxy: its plan from the `todowrite` tool calls it relays.

`opencode acp` (1.18) sends no `plan` updates; each `todowrite` call reaches the editor as tool
call updates, the last (`completed`) carrying the list OpenCode stored in
`rawOutput.metadata.todos`, under OpenCode's own call id and session id. The proxy records that
list in `opencode-<sessionId>` with proposal id = the call id (the session and ids the plugin
and `planledger import opencode` use: a call one of them recorded is not recorded again) and
sends the editor the committed plan as a `plan` update."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from domain.errors import SessionExists, SessionNotFound
from domain.todos import opencode_todo_payload
from planledger.service import PlanLedger
from projections.acp import plan_update

PREFIX = "opencode"
CLIENT = "acp-proxy"


def stored_todos(message: Any) -> tuple[str, str, list[Any]] | None:
    """(ACP session id, tool call id, todos) of a finished call that stored a todo list."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    update = params.get("update")
    if not isinstance(update, dict) or update.get("sessionUpdate") != "tool_call_update":
        return None
    output = update.get("rawOutput")
    metadata = output.get("metadata") if isinstance(output, dict) else None
    todos = metadata.get("todos") if isinstance(metadata, dict) else None
    session_id, call_id = params.get("sessionId"), update.get("toolCallId")
    if update.get("status") != "completed" or not isinstance(todos, list):
        return None
    if not isinstance(session_id, str) or not isinstance(call_id, str) or not call_id:
        return None
    return session_id, call_id, todos


def record_todos(
    service: PlanLedger, acp_session_id: str, call_id: str, todos: list[Any]
) -> dict[str, Any] | None:
    """Record the list; the `plan` notification for the editor (None: the ledger refused it)."""
    session_id = f"{PREFIX}-{acp_session_id}"
    payload = opencode_todo_payload(todos)
    try:
        decision = service.submit(session_id, payload, client=CLIENT, proposal_id=call_id)
    except SessionNotFound:
        with contextlib.suppress(SessionExists):  # the plugin may have opened it meanwhile
            service.open_session(session_id, source="acp-proxy")
        decision = service.submit(session_id, payload, client=CLIENT, proposal_id=call_id)
    if decision.status != "committed":
        codes = ", ".join(v.code for v in decision.violations) or decision.status
        print(
            f"planledger acp: todo list of {session_id} {decision.status}: {codes}", file=sys.stderr
        )
        return None
    view = service.plan_after(session_id, decision)
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": acp_session_id, "update": plan_update(view.steps)},
    }
