"""Claude Code: its todo tools recorded and enforced, the plan re-injected after compact, resume
or fork (SPEC "Agent hooks").

- `TodoWrite` (older versions, or `CLAUDE_CODE_ENABLE_TASKS=0`): `PreToolUse` proposes the list
  in the Codex form to `claude-<session_id>` (a subagent's to `claude-<session_id>-<agent_id>`)
  with proposal_id = `tool_use_id`, and denies a rejected list with every violation;
  `PostToolUse` records the call if `PreToolUse` did not.
- Task tools (2.1.19 and later), in the task form, on the session's task list
  (`claude-<session_id>`, or `claude-tasks-<id>` for `CLAUDE_CODE_TASK_LIST_ID`), subagents
  included (`client` = `claude-code:<agent_id>`): `TaskUpdate` is decided before it runs and
  denied when rejected; `TaskCreate` is checked before it runs (its id comes from Claude Code)
  and recorded after, with `tool_response.task.id`; `TaskCreated` records a creation nothing
  recorded; `TaskCompleted` decides a completion and refuses it (exit 2) when the rules do.
- `Stop`, `PreCompact`, `SessionEnd`: the transcript's calls no hook saw are imported.
- `SessionStart` with `source` compact, resume or fork: the plan as `additionalContext`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import SessionNotFound
from domain.session_fields import Origin
from domain.todos import task_create_payload, task_update_payload
from planledger.clients.hooks.claude_transcript import (
    calls_since_compaction,
    fork_parent,
    held_contexts,
    waiting_call,
)
from planledger.clients.hooks.given import first_time
from planledger.clients.hooks.record import (
    event_cwd,
    ledger_session,
    open_if_missing,
    permission_denial,
    plan_context,
    refusal,
    session_start_answer,
    submit_payload,
    submit_steps,
    text_field,
    todo_steps,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext, Refusal

if TYPE_CHECKING:
    from planledger.service import PlanLedger

TODO_WRITE, TASK_CREATE, TASK_UPDATE = "TodoWrite", "TaskCreate", "TaskUpdate"
DEADLINE_SECONDS = 8.0  # under the 10 s timeout `hooks install` sets for tool events
IMPORT_DEADLINE_SECONDS = 25.0  # an import reads the transcript: under the 30 s it sets
PREFIX = "claude"
SOURCE = "claude-code"
CLIENT = "hook:claude-code"
TASK_LIST_ENV = "CLAUDE_CODE_TASK_LIST_ID"
IMPORT_EVENTS = frozenset({"Stop", "PreCompact", "SessionEnd"})
REINJECT_SOURCES = frozenset({"compact", "resume"})
NOT_ID = re.compile(r"[^A-Za-z0-9._-]+")
PLAN_CONTEXTS = ("Task list revision ", "Plan revision ")  # how plan_context's texts begin


def deadline_for(event: Event) -> float:
    """Tool events answer at once; the events that import the transcript get longer."""
    if event.get("hook_event_name") in IMPORT_EVENTS or event.get("source") == "fork":
        return IMPORT_DEADLINE_SECONDS
    return DEADLINE_SECONDS


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    tool = event.get("tool_name")
    if name in ("PreToolUse", "PostToolUse"):
        before = name == "PreToolUse"
        answer: Answer = None
        if tool == TODO_WRITE:
            answer = todo_write(event, context, before=before)
        elif tool == TASK_UPDATE:
            answer = task_update(event, context, before=before)
        elif tool == TASK_CREATE:
            answer = task_create(event, context, before=before)
        if answer is None and not before and tool in (TODO_WRITE, TASK_UPDATE, TASK_CREATE):
            return context_answer("PostToolUse", fork_note(context, event))
        return answer
    if name == "TaskCreated":
        task_created(event, context)
    elif name == "TaskCompleted":
        task_completed(event, context)
    elif name in IMPORT_EVENTS:
        import_transcript(event, context)
    elif name == "UserPromptSubmit":
        return context_answer(name, fork_note(context, event))
    elif name == "SessionStart" and event.get("source") in REINJECT_SOURCES:
        service = context.service()
        text = not_held(event, reinjected(service, event))
        if text is not None and event.get("source") == "resume" and knows_the_plan(service, event):
            text = None
        if text is not None and not first_time(SOURCE, text_field(event, "session_id"), text):
            text = None  # Claude Code keeps SessionStart contexts, across compaction too
        return context_answer(name, text)
    elif name == "SessionStart" and event.get("source") == "clear":
        return context_answer(name, predecessor_note(context.service(), event))
    return None


# -- where a call goes -----------------------------------------------------------------------


def agent_id(event: Event) -> str | None:
    """The subagent the event was fired in (None: the main session)."""
    value = event.get("agent_id")
    return value if isinstance(value, str) and value else None


def task_list(event: Event) -> str:
    """The ledger session of the event's task list."""
    return task_list_session(os.environ, text_field(event, "session_id"))


def task_list_session(env: Mapping[str, str], claude_session: str) -> str:
    """The shared list `CLAUDE_CODE_TASK_LIST_ID` names (its id made a session id), else the
    session's own, `claude-<session id>` (for the hooks and the MCP server alike)."""
    shared = env.get(TASK_LIST_ENV, "").strip()
    if shared:
        return f"claude-tasks-{NOT_ID.sub('-', shared).strip('-.')[:110] or 'default'}"
    return ledger_session(PREFIX, {"session_id": claude_session})


def transcript_of(event: Event) -> Path | None:
    value = event.get("transcript_path")
    return Path(value) if isinstance(value, str) and value else None


def client_of(event: Event) -> str:
    agent = agent_id(event)
    return f"{SOURCE}:{agent}" if agent else CLIENT


def origin_of(event: Event, parent: str | None = None) -> Origin:
    """Where the session comes from: `parent`, else the session a fork copied its history
    from (read in its transcript)."""
    if parent is None:
        transcript = transcript_of(event)
        forked = fork_parent(transcript) if transcript else None
        parent = ledger_session(PREFIX, {"session_id": forked}) if forked else None
    return Origin(source=SOURCE, parent_session_id=parent, cwd=event_cwd(event))


# -- TodoWrite -------------------------------------------------------------------------------


def todo_write(event: Event, context: HookContext, *, before: bool) -> Answer:
    """A subagent's list is its own session, never over the main session's plan."""
    main = ledger_session(PREFIX, event)
    agent = agent_id(event)
    session_id = f"{main}-{agent}" if agent else main
    steps = todo_steps(event.get("tool_input"), "content")
    decision = submit_steps(
        context.service(),
        session_id,
        steps,
        client=client_of(event),
        proposal_id=text_field(event, "tool_use_id"),
        origin=origin_of(event, main if agent else None),
    )
    if not before or decision.status != "rejected":
        return None
    return permission_denial(decision, TODO_WRITE, whole_list=True)


# -- the task tools --------------------------------------------------------------------------


def task_update(event: Event, context: HookContext, *, before: bool) -> Answer:
    """Before it runs: checked; one the rules refuse is recorded as rejected and denied. After
    it ran: recorded, unless Claude Code failed it (it changed nothing there: "Task not
    found" in a fork, say)."""
    service = context.service()
    session_id = task_list(event)
    payload = task_update_payload(event.get("tool_input"))
    if before:
        _task_titles(event, context)  # the first call seen: the transcript's earlier calls first
        if not service.check(session_id, payload).violations:
            return None
    elif _failed(event.get("tool_response")):
        return None
    decision = submit_payload(
        service,
        session_id,
        payload,
        client=client_of(event),
        proposal_id=text_field(event, "tool_use_id"),
        origin=lambda: origin_of(event),
        on_first_use=lambda: import_transcript(event, context),
    )
    if before and decision.status != "committed":
        answer = permission_denial(decision, TASK_UPDATE, whole_list=False)
        note = fork_note(context, event) if _names_unknown_task(decision) else None
        if note is not None:  # a fork's first call on a task of its parent
            answer["hookSpecificOutput"]["permissionDecisionReason"] += f"\n\n{note}"
        return answer
    return None


def task_create(event: Event, context: HookContext, *, before: bool) -> Answer:
    """Before it runs: checked, not recorded (Claude Code gives the id); denied when the rules
    refuse it. After: recorded with the id Claude Code gave, unless that task is recorded."""
    service = context.service()
    session_id = task_list(event)
    tool_input = event.get("tool_input")
    if before:
        decision = service.check(session_id, task_create_payload(tool_input))
        return (
            permission_denial(decision, TASK_CREATE, whole_list=False)
            if decision.violations
            else None
        )
    task_id = _created_id(event.get("tool_response"))
    if task_id is None:
        return None  # not created
    titles = _task_titles(event, context)
    subject = tool_input.get("subject") if isinstance(tool_input, dict) else None
    if task_id in titles:
        if titles[task_id] == subject:
            return None  # recorded already (by the catch-up, or a retried hook)
        # Claude Code numbers from 1 again once its task files are gone (cleaned up) and the
        # session resumes: the ledger's task of that id is no longer Claude Code's. It leaves
        # the plan (the history keeps it) for the task Claude Code made now.
        submit_payload(
            service,
            session_id,
            {"op": "update", "id": task_id, "status": "deleted"},
            client=client_of(event),
            proposal_id=f"{text_field(event, 'tool_use_id')}-renumbered",
        )
    submit_payload(
        service,
        session_id,
        task_create_payload(tool_input, task_id),
        client=client_of(event),
        proposal_id=text_field(event, "tool_use_id"),
        origin=lambda: origin_of(event),
    )
    return None


def task_created(event: Event, context: HookContext) -> None:
    """A task Claude Code created: recorded unless a hook or an import recorded it."""
    task_id = text_field(event, "task_id")
    service = context.service()
    session_id = task_list(event)
    subject = event.get("task_subject")
    if _waiting(event, TASK_CREATE, lambda tool_input: tool_input.get("subject") == subject):
        return  # a TaskCreate call of this session: its PostToolUse records it, every field
    if task_id in _task_titles(event, context):
        return
    payload: dict[str, Any] = {"op": "create", "id": task_id, "title": subject}
    if event.get("task_description") is not None:
        payload["detail"] = event["task_description"]
    submit_payload(
        service,
        session_id,
        payload,
        client=client_of(event),
        proposal_id=f"task-{NOT_ID.sub('-', task_id)[:100]}-created",
        origin=lambda: origin_of(event),
    )


def task_completed(event: Event, context: HookContext) -> None:
    """A completion the list does not have yet is decided; refused (exit 2, the violations on
    stderr) when the rules refuse it. A task the ledger does not know is left to Claude Code."""
    task_id = text_field(event, "task_id")
    service = context.service()
    session_id = task_list(event)
    try:
        steps = {step.id: step for step in service.plan(session_id).steps}
    except SessionNotFound:
        return
    step = steps.get(task_id)
    if step is None or step.status == "completed":
        return
    if _waiting(
        event,
        TASK_UPDATE,
        lambda tool_input: (
            str(tool_input.get("taskId")) == task_id and tool_input.get("status") == "completed"
        ),
    ):
        return  # a TaskUpdate the PreToolUse hook checked: its PostToolUse records it
    decision = submit_payload(
        service,
        session_id,
        {"op": "update", "id": task_id, "status": "completed"},
        client=client_of(event),
        proposal_id=f"task-{NOT_ID.sub('-', task_id)[:100]}-completed",
    )
    if decision.status != "committed":
        raise Refusal(refusal(decision, "TaskUpdate", whole_list=False))


def _names_unknown_task(decision: Any) -> bool:
    return any(violation.code == "unknown_step" for violation in decision.violations)


def _waiting(event: Event, tool: str, matches: Any) -> bool:
    transcript = transcript_of(event)
    return transcript is not None and waiting_call(transcript, tool, matches)


def _failed(tool_response: Any) -> bool:
    """Whether Claude Code's answer says the tool changed nothing."""
    return isinstance(tool_response, dict) and (
        tool_response.get("success") is False or bool(tool_response.get("error"))
    )


def _created_id(tool_response: Any) -> str | None:
    task = tool_response.get("task") if isinstance(tool_response, dict) else None
    task_id = task.get("id") if isinstance(task, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None


def _task_titles(event: Event, context: HookContext) -> dict[str, str]:
    """The tasks the list has now, id to title. The first task call the ledger sees of a
    session (the hooks were installed, or the database came back, mid-session) records the
    transcript's earlier calls first."""
    service = context.service()
    session_id = task_list(event)
    try:
        return {step.id: step.title for step in service.plan(session_id).steps}
    except SessionNotFound:
        import_transcript(event, context)
    try:
        return {step.id: step.title for step in service.plan(session_id).steps}
    except SessionNotFound:
        return {}


# -- the transcript and the handoff ------------------------------------------------------------


def import_transcript(event: Event, context: HookContext) -> None:
    """Record the transcript's plan calls (its subagents' files too) that no hook recorded."""
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return
    path = Path(transcript)
    paths = [path]
    subagents = path.parent / path.stem / "subagents"
    if subagents.is_dir():
        paths.append(subagents)
    from planledger.importers.run import import_paths

    shared = os.environ.get(TASK_LIST_ENV, "").strip()
    report = import_paths(
        context.service(),
        "claude",
        paths,
        source=SOURCE,
        task_list=task_list(event) if shared else None,
    )
    if report.errors:
        first = report.errors[0]
        more = f" (+{report.error_count - 1:,} more)" if report.error_count > 1 else ""
        context.warn(f"{first.path}:{first.line}: {first.message}{more}")


def context_answer(hook_event: str, text: str | None) -> dict[str, Any] | None:
    """The answer that adds `text` to the model's context (None: nothing to add)."""
    answer = session_start_answer(text)
    if answer is not None:
        answer["hookSpecificOutput"]["hookEventName"] = hook_event
    return answer


def not_held(event: Event, text: str | None) -> str | None:
    """`text`, unless the model holds it already (given since the last compaction)."""
    transcript = transcript_of(event)
    if text is None or (transcript and text in held_contexts(transcript)):
        return None
    return text


def knows_the_plan(service: PlanLedger, event: Event) -> bool:
    """Whether a resumed model still holds the plan: an earlier plan context, and every change
    since made by its own calls, which it still sees (so a resume adds no second plan text)."""
    transcript = transcript_of(event)
    if transcript is None:
        return False
    if not any(text.startswith(PLAN_CONTEXTS) for text in held_contexts(transcript)):
        return False
    try:
        entries = service.history(task_list(event)).entries
    except SessionNotFound:
        return False
    committed = [entry for entry in entries if entry.kind == "committed"]
    return bool(committed) and committed[-1].proposal_id in calls_since_compaction(transcript)


def fork_note(context: HookContext, event: Event) -> str | None:
    """Once a fork's transcript exists: its ledger session opened with the parent recorded,
    and the model told once which tasks were open in the parent (Claude Code's fork holds
    none of them)."""
    transcript = transcript_of(event)
    parent = fork_parent(transcript) if transcript else None
    if parent is None:
        return None  # not a fork (the common case: the database is not touched)
    service = context.service()
    parent_session = ledger_session(PREFIX, {"session_id": parent})
    own = ledger_session(PREFIX, event)
    open_if_missing(service, own, origin_of(event, parent_session))
    text = open_tasks_note(service, parent_session, "forked from")
    return not_held(event, text)


def predecessor_note(service: PlanLedger, event: Event) -> str | None:
    """After `/clear` (a new session in the same project): the session before it recorded as
    its predecessor, and the model told once which of its tasks were still open."""
    own = ledger_session(PREFIX, event)
    cwd = event_cwd(event)
    before = next(
        (
            item.session_id
            for item in service.sessions().sessions
            if item.session_id != own
            and item.source == SOURCE
            and item.cwd == cwd
            and not item.session_id.startswith(f"{own}-")
        ),
        None,
    )
    if before is None:
        return None
    open_if_missing(service, own, origin_of(event, before))
    return not_held(event, open_tasks_note(service, before, "continued from"))


def open_tasks_note(service: PlanLedger, session_id: str, relation: str) -> str | None:
    """What a session that came out of `session_id` should know of its open tasks."""
    text = plan_context(service, session_id)
    if text is None:
        return None
    return (
        f"This session {relation} {session_id}, whose plan is below; this session's own task "
        f"list starts empty. Read the earlier plan with `planledger plan show {session_id}`; "
        f"create here only the tasks you will work on.\n{text}"
    )


def reinjected(service: PlanLedger, event: Event) -> str | None:
    """The open tasks of the session's task list, else its TodoWrite plan (None: neither)."""
    for session_id in dict.fromkeys((task_list(event), ledger_session(PREFIX, event))):
        text = plan_context(service, session_id)
        if text is not None:
            return text
    return None
