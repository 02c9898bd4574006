"""Gemini CLI: `write_todos` and the task tracker's tools recorded and enforced, the plan
re-injected on resume and after Gemini compresses its context.

- `BeforeTool` of `write_todos`: propose `tool_input.todos` (description → step) to
  `gemini-<session_id>`; a rejected list gets `{"decision": "deny", "reason": ...}`, which Gemini
  sends to the model as the tool's error. Gemini's event carries no tool-call id, so the ledger
  names the proposal.
- The experimental task tracker (`experimental.taskTracker`), in the task form on the same
  session: `tracker_update_task` and `tracker_add_dependency` are decided before they run and
  denied when rejected; `tracker_create_task` is checked before it runs and recorded after it
  ran (`AfterTool`), with the id its answer names (`Created task <id>: <title>`). Statuses:
  open → pending, in_progress, closed → completed, blocked → pending (the task form has no
  blocked status: a task waits on its blockers). A tracker update's `dependencies` add
  blockers; one it drops stays recorded.
- `SessionStart` with `source` resume: the plan as `additionalContext`. `PreCompress` marks the
  session; the next `BeforeAgent` (the next prompt) gets the plan as `additionalContext`, since
  Gemini's `PreCompress` answer cannot add context itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from domain.errors import SessionNotFound
from domain.session import Origin
from planledger.clients.hooks.record import (
    event_cwd,
    ledger_session,
    plan_context,
    refusal,
    session_start_answer,
    submit_payload,
    submit_steps,
    todo_steps,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext

TOOL = "write_todos"
CREATE, UPDATE, DEPEND = "tracker_create_task", "tracker_update_task", "tracker_add_dependency"
DEADLINE_SECONDS = 8.0  # under the 10 s timeout `hooks install` sets
PREFIX = "gemini"
SOURCE = "gemini"
CLIENT = "hook:gemini"
TRACKER_STATUS = {
    "open": "pending",
    "in_progress": "in_progress",
    "blocked": "pending",
    "closed": "completed",
}
CREATED = re.compile(r"Created task ([A-Za-z0-9._-]+):")
COMPRESSED = "gemini-compressed"  # marks under PLANLEDGER_HOME/hooks/


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    tool = event.get("tool_name")
    if name == "BeforeTool" and tool == TOOL:
        steps = todo_steps(event.get("tool_input"), "description")
        decision = submit_steps(
            context.service(),
            ledger_session(PREFIX, event),
            steps,
            client=CLIENT,
            proposal_id=None,
            origin=origin_of(event),
        )
        return deny(decision, TOOL, whole_list=True) if decision.status == "rejected" else None
    if name == "BeforeTool" and tool in (UPDATE, DEPEND, CREATE):
        return tracker_before(event, context, tool)
    if name == "AfterTool" and tool == CREATE:
        tracker_created(event, context)
        return None
    if name == "SessionStart" and event.get("source") == "resume":
        return session_start_answer(plan_context(context.service(), ledger_session(PREFIX, event)))
    if name == "PreCompress":
        mark = compressed_mark(event)
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
        return None
    if name == "BeforeAgent":
        mark = compressed_mark(event)
        if not mark.exists():
            return None
        mark.unlink(missing_ok=True)
        text = plan_context(context.service(), ledger_session(PREFIX, event))
        if text is None:
            return None
        return {"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": text}}
    return None


def origin_of(event: Event) -> Origin:
    return Origin(source=SOURCE, cwd=event_cwd(event))


def deny(decision: Any, tool: str, *, whole_list: bool) -> dict[str, Any]:
    return {"decision": "deny", "reason": refusal(decision, tool, whole_list=whole_list)}


def compressed_mark(event: Event) -> Path:
    """Where `PreCompress` notes that the session's context was compressed."""
    from planledger.storage.settings import home_dir

    return home_dir() / "hooks" / COMPRESSED / ledger_session(PREFIX, event)


# -- the task tracker ------------------------------------------------------------------------


def tracker_payload(tool: str, tool_input: Any) -> dict[str, Any]:
    """A tracker call in the task form (fields it does not define are left out)."""
    given = tool_input if isinstance(tool_input, dict) else {}
    if tool == CREATE:
        payload: dict[str, Any] = {"op": "create", "title": given.get("title")}
        if given.get("description") is not None:
            payload["detail"] = given["description"]
        return payload
    if tool == DEPEND:
        return {
            "op": "update",
            "id": given.get("taskId"),
            "add_blocked_by": [given.get("dependencyId")],
        }
    payload = {"op": "update", "id": given.get("id")}
    if "title" in given:
        payload["title"] = given["title"]
    if "description" in given:
        payload["detail"] = given["description"]
    if "status" in given:
        status = given["status"]
        payload["status"] = (
            TRACKER_STATUS.get(status, status) if isinstance(status, str) else status
        )
    if "dependencies" in given:
        payload["add_blocked_by"] = given["dependencies"]
    return payload


def tracker_before(event: Event, context: HookContext, tool: str) -> Answer:
    """An update or a dependency is decided before it runs; a create (whose id Gemini makes)
    is only checked."""
    service = context.service()
    session_id = ledger_session(PREFIX, event)
    payload = tracker_payload(tool, event.get("tool_input"))
    if tool == CREATE:
        decision = service.check(session_id, payload)
        return deny(decision, tool, whole_list=False) if decision.violations else None
    decision = submit_payload(
        service,
        session_id,
        payload,
        client=CLIENT,
        proposal_id=None,
        origin=origin_of(event),
    )
    return deny(decision, tool, whole_list=False) if decision.status != "committed" else None


def tracker_created(event: Event, context: HookContext) -> None:
    """The task Gemini created, recorded with the id its answer names (once: a task already
    in the list is not created again)."""
    task_id = _created_id(event.get("tool_response"))
    if task_id is None:
        return
    service = context.service()
    session_id = ledger_session(PREFIX, event)
    try:
        known = {step.id for step in service.plan(session_id).steps}
    except SessionNotFound:
        known = set()
    if task_id in known:
        return
    tool_input = event.get("tool_input")
    payload = {**tracker_payload(CREATE, tool_input), "id": task_id}
    origin = origin_of(event)
    submit_payload(service, session_id, payload, client=CLIENT, proposal_id=None, origin=origin)
    dependencies = tool_input.get("dependencies") if isinstance(tool_input, dict) else None
    if dependencies:
        blockers = {"op": "update", "id": task_id, "add_blocked_by": dependencies}
        submit_payload(service, session_id, blockers, client=CLIENT, proposal_id=None)


def _created_id(tool_response: Any) -> str | None:
    """The id in a create's answer (`llmContent`: a text, or parts holding texts)."""
    content = tool_response.get("llmContent") if isinstance(tool_response, dict) else None
    if isinstance(content, list):
        content = " ".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    if not isinstance(content, str):
        return None
    match = CREATED.search(content)
    return match.group(1) if match else None
