"""Hook events as the agents send them, built from Claude Code transcripts and Codex rollouts
written here, and a runner for the installed `planledger hook` command."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.claude_transcripts import Transcript, todo_transcript
from tests.e2e.test_cli import planledger_command


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


def todo_session(
    folder: Path, session: str = "7e6e3ea2-todos"
) -> tuple[Transcript, Path, list[str]]:
    """A Claude Code session of four valid TodoWrite calls (its transcript written under
    `folder`), and the calls' ids in order."""
    transcript, call_ids = todo_transcript(session)
    return transcript, transcript.write(folder / f"{session}.jsonl"), call_ids


def todos_of(transcript: Transcript, call_id: str) -> list[dict[str, Any]]:
    todos: list[dict[str, Any]] = transcript.inputs[call_id][1]["todos"]
    return todos


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
