"""Claude Code transcripts and hook events written from the shapes Claude Code 2.1.x writes and
sends (its hooks reference, and the real transcripts described in ../shared/samples/README.md),
for the importer's and the hooks' tests: our own fixtures, so the tests need nothing beside the
repository.

A transcript line is `{"type": "assistant" | "user", "sessionId", "cwd", "timestamp", "message":
{"content": [...]}}`; a tool's answer is a `user` line with a `tool_result` block and the tool's
own result under `toolUseResult`. A subagent's lines are `progress` lines of the parent's file
(`data.type == "agent_progress"`, `data.agentId`, `data.message.message`: no `toolUseResult`
there), or the lines of its own `subagents/agent-<id>.jsonl` (top-level `agentId`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 2, 3, 4, 30, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")[:-6] + "Z"


@dataclass
class Transcript:
    """One session's transcript, written as Claude Code appends it."""

    session: str
    cwd: str = "/work/project"
    lines: list[dict[str, Any]] = field(default_factory=list)
    agent_files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    inputs: dict[str, tuple[str, Any, str | None]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)  # call id -> toolUseResult
    clock: float = 0.0
    calls: int = 0
    tasks: int = 0  # Claude Code's numbering: ids are never reused

    # -- lines ------------------------------------------------------------------------------

    def _base(self, kind: str) -> dict[str, Any]:
        self.clock += 1.0
        return {
            "parentUuid": None,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.29",
            "gitBranch": "main",
            "type": kind,
            "uuid": f"u-{len(self.lines)}",
            "timestamp": stamp(self.clock),
        }

    def _add(
        self,
        role: str,
        content: list[dict[str, Any]],
        agent: str | None,
        answer: Any = None,
        in_file: bool = False,
    ) -> None:
        message = {"role": role, "content": content}
        if role == "assistant":
            message |= {"model": "claude-opus-4-5-20251101", "type": "message"}
        if agent is not None and in_file:  # the subagent's own file
            line = {**self._base(role), "isSidechain": True, "agentId": agent, "message": message}
            if answer is not None:
                line["toolUseResult"] = answer
            self.agent_files.setdefault(agent, []).append(line)
            return
        if agent is not None:  # a progress line of the parent's file
            line = self._base("progress")
            line["data"] = {
                "type": "agent_progress",
                "agentId": agent,
                "prompt": "You are implementing a task",
                "normalizedMessages": [],
                "message": {"type": role, "timestamp": line["timestamp"], "message": message},
            }
            self.lines.append(line)
            return
        line = {**self._base(role), "message": message}
        if answer is not None:
            line["toolUseResult"] = answer
        self.lines.append(line)

    def tool_use(
        self, name: str, tool_input: Any, agent: str | None = None, in_file: bool = False
    ) -> str:
        self.calls += 1
        call_id = f"toolu_{self.session[:6]}{self.calls:04d}"
        block = {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
        self._add("assistant", [block], agent, in_file=in_file)
        self.inputs[call_id] = (name, tool_input, agent)
        return call_id

    def answer(
        self,
        call_id: str,
        text: str,
        result: Any,
        *,
        is_error: bool = False,
        agent: str | None = None,
        in_file: bool = False,
    ) -> None:
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": text}
        if is_error:
            block["is_error"] = True
        self._add("user", [block], agent, answer=result, in_file=in_file)
        self.answers[call_id] = result

    # -- the plan tools ---------------------------------------------------------------------

    def todo_write(self, todos: list[dict[str, Any]], agent: str | None = None) -> str:
        call_id = self.tool_use("TodoWrite", {"todos": todos}, agent)
        self.answer(
            call_id,
            "Todos have been modified successfully. Ensure that you continue to use the todo "
            "list to track your progress.",
            {"oldTodos": [], "newTodos": todos},
            agent=agent,
        )
        return call_id

    def task_create(
        self,
        subject: str,
        description: str = "Do it well.",
        *,
        agent: str | None = None,
        error: str | None = None,
        answered: bool = True,
        in_file: bool = False,
    ) -> tuple[str, str | None]:
        """(call id, the task id Claude Code gave; None when it failed or is unanswered)."""
        tool_input = {"subject": subject, "description": description, "activeForm": "Working"}
        call_id = self.tool_use("TaskCreate", tool_input, agent, in_file)
        if not answered:
            return call_id, None
        if error is not None:
            self.answer(call_id, error, f"Error: {error}", is_error=True, agent=agent)
            return call_id, None
        self.tasks += 1
        task_id = str(self.tasks)
        self.answer(
            call_id,
            f"Task #{task_id} created successfully: {subject}",
            {"task": {"id": task_id, "subject": subject}},
            agent=agent,
            in_file=in_file,
        )
        return call_id, task_id

    def task_update(
        self,
        task_id: Any,
        *,
        agent: str | None = None,
        error: str | None = None,
        in_file: bool = False,
        **fields: Any,
    ) -> str:
        call_id = self.tool_use("TaskUpdate", {"taskId": task_id, **fields}, agent, in_file)
        if error is not None:
            answer = {"success": False, "taskId": task_id, "updatedFields": [], "error": error}
            self.answer(call_id, error, answer, is_error=True, agent=agent, in_file=in_file)
            return call_id
        answer = {"success": True, "taskId": task_id, "updatedFields": sorted(fields)}
        self.answer(
            call_id,
            f"Updated task #{task_id} {' '.join(sorted(fields))}",
            answer,
            agent=agent,
            in_file=in_file,
        )
        return call_id

    def other_tool(self) -> None:
        call_id = self.tool_use("Bash", {"command": "make test"})
        self.answer(call_id, "ok", {"stdout": "ok", "stderr": ""})

    # -- files and hook events --------------------------------------------------------------

    def write(self, path: Path, lines: slice | None = None) -> Path:
        """The transcript at `path` (its subagents' files in `<path stem>/subagents/`)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        chosen = self.lines if lines is None else self.lines[lines]
        path.write_text("".join(json.dumps(line) + "\n" for line in chosen), encoding="utf-8")
        for agent, agent_lines in self.agent_files.items():
            folder = path.parent / path.stem / "subagents"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"agent-{agent}.jsonl").write_text(
                "".join(json.dumps(line) + "\n" for line in agent_lines), encoding="utf-8"
            )
        return path

    def event(self, name: str, call_id: str, transcript: Path | None = None) -> dict[str, Any]:
        """The `PreToolUse` / `PostToolUse` event of one call, as Claude Code sends it."""
        tool, tool_input, agent = self.inputs[call_id]
        event: dict[str, Any] = {
            "session_id": self.session,
            "transcript_path": str(transcript) if transcript else None,
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": name,
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": call_id,
        }
        if agent is not None:
            event |= {"agent_id": agent, "agent_type": "general-purpose"}
        if name == "PostToolUse":
            event["tool_response"] = self.answers.get(call_id)
        return event

    def lifecycle(self, name: str, transcript: Path | None = None, **fields: Any) -> dict[str, Any]:
        """Any other event of the session (Stop, SessionStart, TaskCompleted, ...)."""
        return {
            "session_id": self.session,
            "transcript_path": str(transcript) if transcript else None,
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": name,
            **fields,
        }


TEXTS = ["Read the failing test", "Fix the parser", "Update the docs", "Run the suite"]


def todo_transcript(session: str) -> tuple[Transcript, list[str]]:
    """A session of four valid TodoWrite calls among other tools' lines, and the calls' ids."""
    transcript = Transcript(session)
    call_ids = []
    for n in range(4):
        transcript.other_tool()
        todos = [
            {
                "content": text,
                "status": "completed" if i < n else "in_progress" if i == n else "pending",
                "activeForm": text,
            }
            for i, text in enumerate(TEXTS)
        ]
        call_ids.append(transcript.todo_write(todos))
    return transcript, call_ids
