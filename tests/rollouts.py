"""Codex rollout files written from the spec's shape, for the importer's tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2025, 9, 1, 10, 0, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")[:-6] + "Z"


def plan_args(*steps: tuple[str, str], explanation: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"plan": [{"step": text, "status": status} for text, status in steps]}
    if explanation is not None:
        body["explanation"] = explanation
    return body


@dataclass
class Rollout:
    """The lines of one rollout file: `session_meta`, then the items added in order.

    A fork's `session_meta` names the session it was forked from (`forked_from_id`), a
    spawned subagent's its parent thread (`source.subagent.thread_spawn.parent_thread_id`)."""

    session: str
    lines: list[str] = field(default_factory=list)
    forked_from: str | None = None
    subagent_of: str | None = None
    started: float = 0

    def __post_init__(self) -> None:
        meta: dict[str, Any] = {
            "id": self.session,
            "timestamp": stamp(self.started),
            "cwd": "/repo",
            "originator": "codex_cli_rs",
            "cli_version": "0.155.1",
            "source": "cli",
        }
        if self.forked_from:
            meta["forked_from_id"] = self.forked_from
        if self.subagent_of:
            spawn = {"parent_thread_id": self.subagent_of, "depth": 1}
            meta["source"] = {"subagent": {"thread_spawn": spawn}}
        self.record(self.started, "session_meta", meta)
        self.record(
            self.started + 0.5, "turn_context", {"cwd": "/repo", "approval_policy": "on-request"}
        )

    def replay(self, lines: list[str]) -> Rollout:
        """A parent's lines copied after this session's own `session_meta`, as a fork does."""
        self.lines += lines
        return self

    def record(self, at: float, kind: str, payload: dict[str, Any]) -> Rollout:
        self.lines.append(json.dumps({"timestamp": stamp(at), "type": kind, "payload": payload}))
        return self

    def user(self, at: float, text: str) -> Rollout:
        content = [{"type": "input_text", "text": text}]
        return self.record(
            at, "response_item", {"type": "message", "role": "user", "content": content}
        )

    def update_plan(
        self, at: float, call_id: str, arguments: dict[str, Any], *, as_text: bool = True
    ) -> Rollout:
        """An update_plan call (arguments as JSON text, or as an object) and its output."""
        self.record(
            at,
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "arguments": json.dumps(arguments) if as_text else arguments,
                "call_id": call_id,
            },
        )
        return self.record(
            at + 0.1,
            "response_item",
            {"type": "function_call_output", "call_id": call_id, "output": "Plan updated"},
        )

    def other_tools(self, at: float, call_id: str) -> Rollout:
        """Lines that are not plan calls: reasoning, a shell call, its output, token counts."""
        self.record(at, "response_item", {"type": "reasoning", "summary": [], "content": None})
        self.record(
            at,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", "rg update_plan"]}),
                "call_id": call_id,
            },
        )
        self.record(
            at + 0.1,
            "response_item",
            {"type": "function_call_output", "call_id": call_id, "output": "no update_plan here"},
        )
        return self.record(at + 0.2, "event_msg", {"type": "token_count", "info": None})

    def raw(self, text: str) -> Rollout:
        """A line as it is (damaged, or nested deeper than a parser goes)."""
        self.lines.append(text)
        return self

    def hook_event(self, path: Path, name: str = "Stop") -> dict[str, Any]:
        """The Codex hook event (`Stop` by default) of this session, its rollout at `path`."""
        return {
            "session_id": self.session,
            "turn_id": "turn-1",
            "transcript_path": str(path),
            "cwd": "/repo",
            "hook_event_name": name,
            "model": "gpt-5-codex",
            "stop_hook_active": False,
        }

    def write(self, path: Path, lines: slice = slice(None)) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in self.lines[lines]))
        return path
