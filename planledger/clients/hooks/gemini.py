"""Gemini CLI: `write_todos` and the task tracker's tools recorded and enforced, the plan
re-injected on resume and after Gemini compresses its context.

- `BeforeTool` of `write_todos`: propose `tool_input.todos` (description → step) to
  `gemini-<session_id>`; a rejected list gets `{"decision": "deny", "reason": ...}`, which Gemini
  sends to the model as the tool's error. Gemini's event carries no tool-call id, so the ledger
  names the proposal. A subagent's (`invoke_agent`) `write_todos` fires the same event, with the
  main session's id and recording: the list is its own, in `gemini-<its sessionId>` (parent
  recorded), found as the subagent recording (`chats/<session_id>/*.jsonl`, `kind: "subagent"`)
  written after the main one: the recording of the turn whose call is about to run.
- The experimental task tracker (`experimental.taskTracker`), in the task form on the same
  session: `tracker_update_task` and `tracker_add_dependency` are decided before they run and
  denied when rejected; `tracker_create_task` is checked before it runs and recorded after it
  ran (`AfterTool`), with the id its answer names (`Created task <id>: <title>`). Statuses:
  open → pending, in_progress, closed → completed, blocked → pending (the task form has no
  blocked status: a task waits on its blockers). A tracker update's `dependencies` add
  blockers; one it drops stays recorded.
- Re-injection, once per resume or real compression, always through the next `BeforeAgent`
  (Gemini appends its `additionalContext` after the prompt): `SessionStart`'s context is put in
  front of the first prompt, which turns a slash command given with the resume
  (`--resume latest -p /compress`) into text, so `SessionStart` (resume) only marks the session.
  Gemini 0.61 fires `PreCompress` (`trigger: "auto"`) before every turn, compression or not:
  only `trigger: "manual"` (`/compress`), or the chat recording showing its history replaced by
  a compression since that `PreCompress`, counts as a compression.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from domain.errors import SessionNotFound
from domain.session_fields import Origin
from domain.todos import gemini_call_id, gemini_todo_payload
from planledger.clients.hooks.record import (
    event_cwd,
    ledger_session,
    plan_context,
    refusal,
    submit_payload,
    text_field,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext, HookInputError

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
RESUMED = "gemini-resumed"
# The model turn Gemini puts after a compression's summary (packages/core, chatCompressionService).
COMPRESSION_ACK = "Got it. Thanks for the additional context!"
MAX_CALLS_PER_TURN = 32
TAIL_BYTES = 1 << 20


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    tool = event.get("tool_name")
    if name == "BeforeTool" and tool == TOOL:
        return write_todos(event, context)
    if name == "BeforeTool" and tool in (UPDATE, DEPEND, CREATE):
        return tracker_before(event, context, tool)
    if name == "AfterTool" and tool == CREATE:
        tracker_created(event, context)
        return None
    if name == "SessionStart" and event.get("source") == "resume":
        _write_mark(mark_path(RESUMED, event), {})
        return None
    if name == "PreCompress":
        mark = mark_path(COMPRESSED, event)
        if not mark.exists():  # the earliest since the last prompt: a compression comes after it
            offset = _size(event.get("transcript_path"))
            _write_mark(mark, {"trigger": event.get("trigger"), "offset": offset})
        return None
    if name == "BeforeAgent":
        return before_agent(event, context)
    return None


def write_todos(event: Event, context: HookContext) -> Answer:
    tool_input = event.get("tool_input")
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list) or not all(isinstance(todo, dict) for todo in todos):
        raise HookInputError("tool_input.todos is not a list of objects")
    payload = gemini_todo_payload(todos)
    service = context.service()
    session_id, origin = ledger_session(PREFIX, event), origin_of(event)
    recording = event.get("transcript_path")
    subagent = acting_subagent(recording, text_field(event, "session_id"))
    if subagent is not None:
        recording, sub_session = subagent
        session_id, origin = f"{PREFIX}-{sub_session}", origin_of(event, parent=session_id)
    turn = last_model_turn(recording)
    for index in range(MAX_CALLS_PER_TURN if turn else 1):
        proposal_id = gemini_call_id(turn, index) if turn else None
        decision = submit_payload(
            service,
            session_id,
            payload,
            client=CLIENT,
            proposal_id=proposal_id,
            origin=origin,
        )
        if not any(v.code == "proposal_id_reused" for v in decision.violations):
            break
    return deny(decision, TOOL, whole_list=True) if decision.status == "rejected" else None


def acting_subagent(transcript: Any, session: str) -> tuple[str, str] | None:
    """(recording, sessionId) of the subagent whose turn is running, if one is: its recording
    (beside the main one, `<chats>/<session>/`) was written after the main recording."""
    if not isinstance(transcript, str) or not transcript:
        return None
    main = Path(transcript)
    try:
        since = main.stat().st_mtime_ns
        subagents = [(p.stat().st_mtime_ns, p) for p in (main.parent / session).glob("*.jsonl")]
    except OSError:
        return None
    for written, path in sorted(subagents, reverse=True):
        if written < since:
            break
        header = next(iter(_records(str(path), 0)), {})
        sub_session = header.get("sessionId")
        if header.get("kind") == "subagent" and isinstance(sub_session, str) and sub_session:
            return str(path), sub_session
    return None


def last_model_turn(transcript: Any) -> str | None:
    """The id of the chat recording's latest model (`gemini`) message: the turn whose call is
    about to run (Gemini records the turn before it runs its tools)."""
    tail = max(0, _size(transcript) - TAIL_BYTES)  # the turn is among the last lines
    for record in reversed(_records(transcript, tail)):
        if record.get("type") == "gemini" and isinstance(record.get("id"), str):
            turn: str = record["id"]
            return turn if re.fullmatch(r"[A-Za-z0-9._-]{1,60}", turn) else None
    return None


def before_agent(event: Event, context: HookContext) -> Answer:
    """The plan again after a resume or a real compression, once."""
    resumed = mark_path(RESUMED, event)
    compressed = mark_path(COMPRESSED, event)
    wanted = resumed.exists() or _compressed_since(compressed, event.get("transcript_path"))
    resumed.unlink(missing_ok=True)
    compressed.unlink(missing_ok=True)
    if not wanted:
        return None
    text = plan_context(context.service(), ledger_session(PREFIX, event))
    if text is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": text}}


def _compressed_since(mark: Path, transcript: Any) -> bool:
    try:
        noted = json.loads(mark.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(noted, dict):
        return False
    if noted.get("trigger") == "manual":
        return True
    offset = noted.get("offset")
    for record in _records(transcript, offset if isinstance(offset, int) else 0):
        replaced = record.get("$set", {}).get("messages") if isinstance(record, dict) else None
        if isinstance(replaced, list) and any(
            isinstance(m, dict) and m.get("type") == "gemini" and COMPRESSION_ACK in str(m)
            for m in replaced
        ):
            return True
    return False


def _records(transcript: Any, offset: int) -> list[dict[str, Any]]:
    """The chat recording's JSON lines from byte `offset` (none when it cannot be read)."""
    if not isinstance(transcript, str) or not transcript:
        return []
    try:
        with open(transcript, "rb") as file:
            file.seek(offset)
            data = file.read()
    except OSError:
        return []
    records = []
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _size(transcript: Any) -> int:
    try:
        return Path(transcript).stat().st_size if isinstance(transcript, str) else 0
    except OSError:
        return 0


def _write_mark(mark: Path, data: dict[str, Any]) -> None:
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps(data))


def origin_of(event: Event, parent: str | None = None) -> Origin:
    return Origin(source=SOURCE, parent_session_id=parent, cwd=event_cwd(event))


def deny(decision: Any, tool: str, *, whole_list: bool) -> dict[str, Any]:
    return {"decision": "deny", "reason": refusal(decision, tool, whole_list=whole_list)}


def mark_path(kind: str, event: Event) -> Path:
    """Where a hook notes a resume or a possible compression of the session, for `BeforeAgent`."""
    from planledger.storage.settings import home_dir

    return home_dir() / "hooks" / kind / ledger_session(PREFIX, event)


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
