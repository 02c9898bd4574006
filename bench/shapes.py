"""Agent transcripts of the shapes real agents write, for the bulk bench (seeded: every run
writes the same bytes).

- `codex_rollout`: a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): a
  `session_meta` line with the instructions, then per plan call a user message, reasoning
  (encrypted), a shell call and its output, a token count (about 4 KB), and the `update_plan`
  call of an 8-step plan (steps of about 50 characters) with its output.
- `claude_session`: a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`)
  whose plan is kept with the task tools: `TaskCreate` for each of 8 tasks, then `TaskUpdate`s
  walking them to completion, each call among about 4 KB of other lines (a user prompt,
  thinking, a Bash call and its result), as Claude Code 2.1.x writes them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORDS = (
    "the", "of", "plan", "test", "code", "fix", "run", "file", "line", "error", "value", "module",
    "parser", "session", "cache", "index", "retry", "config", "handler", "schema",
)  # fmt: skip
STEPS = 8
START = 1_764_547_200  # 2025-12-01T00:00:00Z


def _stamp(seconds: float) -> str:
    import time

    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(START + seconds))
    return f"{whole}.{int(seconds * 1000) % 1000:03d}Z"


def _text(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(WORDS, k=count))


def step_texts(rng: random.Random) -> list[str]:
    """Eight distinct step texts of about 50 characters."""
    return [f"{n + 1}. {_text(rng, 7)}"[:52].rstrip() for n in range(STEPS)]


def statuses(call: int, calls: int) -> list[str]:
    """The steps' statuses at the call-th of `calls` calls: done ones completed, one in progress."""
    done = min(call * (STEPS + 1) // calls, STEPS)
    return [
        "completed" if i < done else "in_progress" if i == done else "pending" for i in range(STEPS)
    ]


def codex_rollout(n: int, calls: int, rng: random.Random) -> str:
    lines: list[str] = []

    def line(at: float, kind: str, payload: dict[str, Any]) -> None:
        lines.append(json.dumps({"timestamp": _stamp(at), "type": kind, "payload": payload}))

    session_id = f"0199b{n:03x}-bulk-7000-8000-{n:012d}"
    line(
        0,
        "session_meta",
        {
            "id": session_id,
            "timestamp": _stamp(0),
            "cwd": f"/home/dev/project-{n % 40}",
            "originator": "codex_cli_rs",
            "cli_version": "0.63.0",
            "instructions": _text(rng, 900),
        },
    )
    texts = step_texts(rng)
    at = 1.0
    for call in range(calls):
        line(
            at,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": _text(rng, 40)}],
            },
        )
        line(
            at,
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": _text(rng, 20)}],
                "encrypted_content": "gAAAAB" + "".join(rng.choices("abcdefXYZ0123", k=1400)),
            },
        )
        plan = [
            {"step": text, "status": status}
            for text, status in zip(texts, statuses(call, calls), strict=True)
        ]
        arguments = json.dumps({"explanation": _text(rng, 10), "plan": plan})
        call_id = f"call_{n}_{call}"
        line(
            at + 0.1,
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "arguments": arguments,
                "call_id": call_id,
            },
        )
        line(
            at + 0.2,
            "response_item",
            {"type": "function_call_output", "call_id": call_id, "output": "Plan updated"},
        )
        shell_id = f"{call_id}_sh"
        line(
            at + 0.3,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", _text(rng, 8)]}),
                "call_id": shell_id,
            },
        )
        output = json.dumps({"output": _text(rng, 300), "metadata": {"exit_code": 0}})
        line(
            at + 0.4,
            "response_item",
            {"type": "function_call_output", "call_id": shell_id, "output": output},
        )
        line(
            at + 0.5,
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": {"input_tokens": 1000 * call, "output_tokens": 90 * call},
                    "model_context_window": 272000,
                },
            },
        )
        at += 10
    return "\n".join(lines) + "\n"


def claude_session(n: int, calls: int, rng: random.Random) -> str:
    """A transcript with `calls` task-tool calls: TaskCreate of each task, then TaskUpdates."""
    session_id = f"5e55{n:04x}-bulk-4000-8000-{n:012d}"
    lines: list[str] = []
    clock = [0.0]

    def line(kind: str, message: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        clock[0] += 1.0
        body = {
            "parentUuid": None,
            "isSidechain": False,
            "userType": "external",
            "cwd": f"/home/dev/project-{n % 40}",
            "sessionId": session_id,
            "version": "2.1.29",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": f"{session_id}-{len(lines)}",
            "timestamp": _stamp(clock[0]),
            **(extra or {}),
        }
        lines.append(json.dumps(body))

    def tool(name: str, tool_input: dict[str, Any], text: str, result: Any) -> None:
        call_id = f"toolu_{n:04d}{len(lines):05d}"
        line(
            "assistant",
            {
                "model": "claude-opus-4-5-20251101",
                "role": "assistant",
                "type": "message",
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
            },
        )
        line(
            "user",
            {
                "role": "user",
                "content": [{"tool_use_id": call_id, "type": "tool_result", "content": text}],
            },
            {"toolUseResult": result},
        )

    def around() -> None:
        line("user", {"role": "user", "content": _text(rng, 40)})
        line(
            "assistant",
            {
                "model": "claude-opus-4-5-20251101",
                "role": "assistant",
                "type": "message",
                "content": [
                    {"type": "thinking", "thinking": _text(rng, 90), "signature": "E" * 300}
                ],
            },
        )
        command = _text(rng, 8)
        output = _text(rng, 170)
        tool("Bash", {"command": command}, output, {"stdout": output, "stderr": ""})

    texts = step_texts(rng)
    updates = [(task, status) for task in range(STEPS) for status in ("in_progress", "completed")]
    for call in range(calls):
        around()
        if call < STEPS:
            subject = texts[call]
            tool(
                "TaskCreate",
                {"subject": subject, "description": _text(rng, 12), "activeForm": "Working"},
                f"Task #{call + 1} created successfully: {subject}",
                {"task": {"id": str(call + 1), "subject": subject}},
            )
            continue
        task, status = updates[(call - STEPS) % len(updates)]
        if call - STEPS >= len(updates):  # past the walk: retitle instead
            fields: dict[str, Any] = {"subject": f"{texts[task]} (again {call})"[:60]}
        else:
            fields = {"status": status}
        tool(
            "TaskUpdate",
            {"taskId": str(task + 1), **fields},
            f"Updated task #{task + 1} {' '.join(sorted(fields))}",
            {"success": True, "taskId": str(task + 1), "updatedFields": sorted(fields)},
        )
    return "\n".join(lines) + "\n"


Writer = Callable[[int, int, random.Random], str]


def write_corpus(folder: Path, kind: str, files: int, calls: int, seed: int = 22) -> int:
    """`files` transcripts of `kind` (codex or claude) under `folder`, laid out as the agent
    lays them out; returns their size in bytes."""
    rng = random.Random(seed)
    total = 0
    for n in range(files):
        if kind == "codex":
            path = folder / f"2025/12/{n % 28 + 1:02d}/rollout-2025-12-01T00-00-00-{n:05d}.jsonl"
            text = codex_rollout(n, calls, rng)
        else:
            path = folder / f"-home-dev-project-{n % 40}/{n:08d}.jsonl"
            text = claude_session(n, calls, rng)
        path.parent.mkdir(parents=True, exist_ok=True)
        total += path.write_bytes(text.encode())
    return total
