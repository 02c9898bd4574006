"""Claude Code transcripts: `TodoWrite` lists in the Codex form, and the task tools (`TaskCreate`,
`TaskUpdate`; Claude Code 2.1.19 and later) in the task form.

A session's calls may be spread over several files that overlap (growing snapshots of one
transcript), and a call's answer may come in a later line, so `read_claude` gathers each file's
tool uses and answers, and `claude_calls` makes the calls of every file of a run at once:

- main-session lines carry `message.content[]`; a subagent's lines are `progress` lines of the
  parent's file (`data.type == "agent_progress"`, `data.agentId`, `data.message.message`) or the
  lines of its own `subagents/agent-<id>.jsonl` (top-level `agentId`);
- `TodoWrite` goes to `claude-<sessionId>`, a subagent's to `claude-<sessionId>-<agentId>`;
- task-tool calls of the session and its subagents go to the session's task list,
  `claude-<sessionId>` (or the shared list the caller names);
- a `TaskCreate` takes the id Claude Code gave it, from its answer's `toolUseResult.task.id` or
  text `Task #<id> created successfully`; a call answered with an error (`is_error`, or
  `toolUseResult.success: false` as in 2.1.3xx) changed nothing in Claude Code, nor does a
  create not answered yet: both are counted, not recorded;
- a fork (`--fork-session`, `/branch`) starts its transcript with a copy of its parent's
  history, each copied assistant line keeping the parent's id in `requestSessionId`: those
  calls are the parent's (recorded from the parent's file, not again in the fork), and the
  fork's own calls record that parent. So the result never depends on the order of the files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from domain.todos import codex_steps, task_create_payload, task_update_payload
from planledger.importers.calls import EARLIEST, PlanCall, in_record_order, parse_timestamp
from planledger.importers.lines import describe, records
from planledger.importers.report import Errors, LineError

TODO_WRITE, TASK_CREATE, TASK_UPDATE = "TodoWrite", "TaskCreate", "TaskUpdate"
PLAN_TOOLS = frozenset({TODO_WRITE, TASK_CREATE, TASK_UPDATE})
# Lines that can hold a plan call or the answer a task call needs (its id, or an error).
MARKERS = (
    b'"TodoWrite"',
    b'"TaskCreate"',
    b'"TaskUpdate"',
    b"Task #",
    b'"is_error":true',
    b'"is_error": true',
    b'"success":false',
    b'"success": false',
)
CREATED = re.compile(r"Task #([A-Za-z0-9._-]+) created successfully")


def session_id(claude_id: str) -> str:
    return f"claude-{claude_id}"


def subagent_session_id(claude_id: str, agent_id: str) -> str:
    """A subagent's own TodoWrite list: never the main session's plan."""
    return f"claude-{claude_id}-{agent_id}"


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
        except (ValueError, RecursionError) as error:
            raise ValueError(f"input is {describe(error)}") from None
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list):
        raise ValueError("input has no `todos` list")
    return todos


@dataclass(frozen=True)
class ToolUse:
    """A plan tool's call as the transcript holds it."""

    call_id: str
    name: str
    input: Any
    claude_session: str | None
    agent_id: str | None
    copied_from: str | None  # the parent session whose history a fork copied this call from
    at: datetime
    cwd: str | None
    path: str
    line: int


@dataclass(frozen=True)
class ToolResult:
    is_error: bool
    task_id: str | None = None  # the id a TaskCreate's answer names


@dataclass
class Findings:
    """One file's plan tool calls and the answers it holds (to any call: the answer of a call
    in one file may be in another)."""

    uses: list[ToolUse] = field(default_factory=list)
    results: dict[str, ToolResult] = field(default_factory=dict)


def read_claude(path: Path, errors: Errors, advance: Callable[[int], None]) -> Findings:
    """The plan tool calls and answers of one transcript file."""
    found = Findings()
    at = EARLIEST
    for number, record in records(path, MARKERS, errors, advance):
        if not isinstance(record, dict):
            continue
        at = parse_timestamp(record.get("timestamp"), at)
        for message, agent_id, when in _messages(record, at):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind, name = block.get("type"), block.get("name")
                if kind == "tool_use" and isinstance(name, str) and name in PLAN_TOOLS:
                    use = _use(block, record, agent_id, when, path, number)
                    if isinstance(use, str):
                        errors.append(LineError(path=str(path), line=number, message=use))
                    else:
                        found.uses.append(use)
                elif kind == "tool_result":
                    _result(block, record, content, found.results)
    return found


def _messages(
    record: dict[str, Any], at: datetime
) -> Iterator[tuple[dict[str, Any], str | None, datetime]]:
    """(message, subagent id or None, its time) of each message a line holds."""
    message = record.get("message")
    if isinstance(message, dict):
        agent = record.get("agentId")
        yield message, agent if isinstance(agent, str) and agent else None, at
    data = record.get("data")
    if record.get("type") == "progress" and isinstance(data, dict):
        inner = data.get("message")
        agent = data.get("agentId")
        if data.get("type") == "agent_progress" and isinstance(inner, dict):
            message = inner.get("message")
            if isinstance(message, dict):
                when = parse_timestamp(inner.get("timestamp"), at)
                yield message, agent if isinstance(agent, str) and agent else None, when


def _use(
    block: dict[str, Any],
    record: dict[str, Any],
    agent_id: str | None,
    at: datetime,
    path: Path,
    number: int,
) -> ToolUse | str:
    name = block["name"]
    call_id = block.get("id")
    if not isinstance(call_id, str) or not call_id:
        return f"{name} call has no id"
    claude_id = record.get("sessionId")
    cwd = record.get("cwd")
    return ToolUse(
        call_id=call_id,
        name=name,
        input=block.get("input"),
        claude_session=claude_id if isinstance(claude_id, str) and claude_id else None,
        agent_id=agent_id,
        copied_from=copied_from(record),
        at=at,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        path=str(path),
        line=number,
    )


def copied_from(record: dict[str, Any]) -> str | None:
    """The session a fork copied this line from (its `requestSessionId`, when not its own)."""
    requested, own = record.get("requestSessionId"), record.get("sessionId")
    if isinstance(requested, str) and requested and isinstance(own, str) and requested != own:
        return requested
    return None


def _result(
    block: dict[str, Any],
    record: dict[str, Any],
    content: list[Any],
    results: dict[str, ToolResult],
) -> None:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        return
    task_id = None
    answer = record.get("toolUseResult")  # the tool's own result: on a line of one answer
    task = answer.get("task") if isinstance(answer, dict) else None
    if isinstance(task, dict) and isinstance(task.get("id"), str) and len(content) == 1:
        task_id = task["id"]
    else:
        match = CREATED.search(_text(block.get("content")))
        task_id = match.group(1) if match else None
    failed = isinstance(answer, dict) and answer.get("success") is False and len(content) == 1
    results[call_id] = ToolResult(is_error=block.get("is_error") is True or failed, task_id=task_id)


def _text(content: Any) -> str:
    """A tool result's text: a string, or the texts of its blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            item["text"]
            for item in content
            if isinstance(item, dict) and isinstance(item.get("text"), str)
        )
    return ""


def claude_calls(
    findings: Sequence[Findings], errors: Errors, task_list: str | None = None
) -> list[PlanCall]:
    """The plan calls of every file of a run, each call once (the first copy read), each
    answered as the transcripts say. `task_list` names the ledger session of the task tools'
    calls (a list several sessions share); by default, each session's own."""
    results: dict[str, ToolResult] = {}
    parents: dict[str, str] = {}
    for found in findings:
        results.update(found.results)
        for use in found.uses:
            if use.copied_from is not None and use.claude_session is not None:
                parents[use.claude_session] = use.copied_from  # the last copied: the parent
    calls: list[PlanCall] = []
    seen: set[str] = set()
    for found in findings:
        for use in found.uses:
            if use.call_id in seen or use.copied_from is not None:
                continue  # recorded once; a fork's copy of its parent's call is the parent's
            seen.add(use.call_id)
            parent = parents.get(use.claude_session or "")
            call = _call(use, results.get(use.call_id), task_list, parent)
            if isinstance(call, str):
                errors.append(LineError(path=use.path, line=use.line, message=call))
            else:
                calls.append(call)
    return renumbered(calls)


def renumbered(calls: Sequence[PlanCall]) -> list[PlanCall]:
    """`calls` in record order, where Claude Code created a task under an id an earlier task of
    another subject holds (it numbers from 1 again once its task files are cleaned up and the
    session resumes), preceded by the deletion of that earlier task (its history kept): the
    hooks record the same deletion under the same id, `<create's tool_use_id>-renumbered`."""
    subjects: dict[tuple[str, str], Any] = {}  # (ledger session, task id) -> its subject
    ordered: list[PlanCall] = []
    for call in in_record_order(calls):
        payload = call.payload or {}
        task_id = payload.get("id")
        key = (call.session_id, task_id if isinstance(task_id, str) else "")
        if call.created_task is not None:
            if key in subjects and subjects[key] != payload.get("title"):
                deletion = {"op": "update", "id": call.created_task, "status": "deleted"}
                ordered.append(
                    replace(
                        call,
                        call_id=f"{call.call_id}-renumbered",
                        payload=deletion,
                        created_task=None,
                        renumbers=call.call_id,
                    )
                )
            subjects[key] = payload.get("title")
        elif payload.get("op") == "update" and key in subjects:
            if payload.get("status") == "deleted":
                del subjects[key]
            elif "title" in payload:
                subjects[key] = payload["title"]
        ordered.append(call)
    return ordered


def _call(
    use: ToolUse, result: ToolResult | None, task_list: str | None, fork_of: str | None = None
) -> PlanCall | str:
    """The call of one tool use (`fork_of`: the Claude session the use's session forked), or
    what is wrong with it."""
    if use.claude_session is None:
        return f"{use.name} call {use.call_id} is on a line without a sessionId"
    main = session_id(use.claude_session)
    forked = session_id(fork_of) if fork_of else None

    def call(
        session: str,
        payload: dict[str, Any] | None,
        parent: str | None = forked,
        created_task: str | None = None,
    ) -> PlanCall:
        return PlanCall(
            session_id=session,
            call_id=use.call_id,
            payload=payload,
            at=use.at,
            path=use.path,
            line=use.line,
            parent_session_id=parent,
            cwd=use.cwd,
            created_task=created_task,
        )

    if use.name == TODO_WRITE:
        try:
            todos = todo_input(use.input)
        except ValueError as error:
            return f"TodoWrite call {use.call_id}: {error}"
        if use.agent_id is not None:
            own = subagent_session_id(use.claude_session, use.agent_id)
            return call(own, todos_payload(todos), parent=main)
        return call(main, todos_payload(todos))
    tasks = task_list or main
    changed_nothing = result is not None and result.is_error
    if use.name == TASK_CREATE:
        task_id = result.task_id if result is not None else None
        if changed_nothing or task_id is None:  # failed, or not answered yet: no id to record
            return call(tasks, None)
        return call(tasks, task_create_payload(use.input, task_id), created_task=task_id)
    if changed_nothing:
        return call(tasks, None)
    return call(tasks, task_update_payload(use.input))
