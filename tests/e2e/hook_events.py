"""Hook events as the agents send them, built from real Claude Code transcripts and from Codex
rollouts written here, and a runner for the installed `planledger hook` command."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.test_cli import planledger_command

# The team's shared folder beside the repository: real Claude Code transcripts.
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "claude"


@dataclass(frozen=True)
class HookRun:
    code: int
    stdout: str
    stderr: str
    seconds: float

    def answer(self) -> Any:
        assert self.code == 0 and not self.stderr, (self.code, self.stderr)
        return json.loads(self.stdout)

    def silent(self) -> bool:
        """Exit 0, nothing on stdout, nothing on stderr."""
        return self.code == 0 and self.stdout == "" and self.stderr == ""


def run_hook(agent: str, event: Any, env: dict[str, str]) -> HookRun:
    """Pipe one event (an object, or raw text) into `planledger hook AGENT`."""
    text = event if isinstance(event, str) else json.dumps(event)
    started = time.perf_counter()
    result = subprocess.run(
        [planledger_command(), "hook", agent],
        input=text,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    return HookRun(result.returncode, result.stdout, result.stderr, time.perf_counter() - started)


@dataclass(frozen=True)
class TodoCall:
    """One real `TodoWrite` call of a Claude Code transcript, with its tool result."""

    session_id: str
    tool_use_id: str
    todos: list[dict[str, Any]]
    cwd: str
    transcript: Path
    response: Any

    def event(self, name: str) -> dict[str, Any]:
        event = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": name,
            "tool_name": "TodoWrite",
            "tool_input": {"todos": self.todos},
            "tool_use_id": self.tool_use_id,
        }
        if name == "PostToolUse":
            event["tool_response"] = self.response
        return event


def todo_calls(transcript: Path) -> list[TodoCall]:
    """Every `TodoWrite` call of a transcript, in order, with the `toolUseResult` it got."""
    records = [json.loads(line) for line in transcript.read_text().splitlines() if line.strip()]
    results = {
        block["tool_use_id"]: record.get("toolUseResult")
        for record in records
        for block in _blocks(record)
        if block.get("type") == "tool_result"
    }
    return [
        TodoCall(
            session_id=record["sessionId"],
            tool_use_id=block["id"],
            todos=block["input"]["todos"],
            cwd=record.get("cwd", "/"),
            transcript=transcript,
            response=results.get(block["id"]),
        )
        for record in records
        for block in _blocks(record)
        if block.get("type") == "tool_use" and block.get("name") == "TodoWrite"
    ]


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = (record.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def session_event(session_id: str, source: str, transcript: Path | None = None) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": str(transcript) if transcript else None,
        "cwd": "/work/project",
        "hook_event_name": "SessionStart",
        "source": source,
    }


class Rollout:
    """A Codex rollout file as Codex writes it: one JSON record a line, appended as it goes."""

    def __init__(self, path: Path, thread_id: str) -> None:
        self.path = path
        self.thread_id = thread_id
        self.calls = 0
        self._write(
            "session_meta",
            {"id": thread_id, "cwd": "/work/project", "originator": "codex_cli_rs"},
        )
        self._write(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        )

    def update_plan(self, plan: list[tuple[str, str]], explanation: str | None = None) -> str:
        """Append one `update_plan` call and its output; returns its call_id."""
        self.calls += 1
        call_id = f"call_{self.thread_id[:8]}_{self.calls}"
        arguments: dict[str, Any] = {"plan": [{"step": s, "status": st} for s, st in plan]}
        if explanation:
            arguments["explanation"] = explanation
        self._write(
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "arguments": json.dumps(arguments),
                "call_id": call_id,
            },
        )
        self._write(
            "response_item",
            {"type": "function_call_output", "call_id": call_id, "output": "Plan updated"},
        )
        return call_id

    def event(self, name: str, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": self.thread_id,
            "turn_id": f"turn-{self.calls}",
            "transcript_path": str(self.path),
            "cwd": "/work/project",
            "hook_event_name": name,
            "model": "gpt-5-codex",
            **fields,
        }

    def _write(self, kind: str, payload: dict[str, Any]) -> None:
        stamp = f"2026-01-20T18:{self.calls // 60:02d}:{self.calls % 60:02d}.000Z"
        with self.path.open("a", encoding="utf-8") as stream:
            record = {"timestamp": stamp, "type": kind, "payload": payload}
            stream.write(json.dumps(record) + "\n")
