"""Codex CLI rollouts of the shape Codex writes, for the bulk bench (seeded: every run writes
the same bytes): `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, a `session_meta` line with the
instructions, then per plan call a user message, reasoning (encrypted), a shell call and its
output, a token count (about 4 KB), and the `update_plan` call of an 8-step plan (steps of
about 50 characters) with its output.
"""

from __future__ import annotations

import json
import random
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


def write_corpus(folder: Path, files: int, calls: int, seed: int) -> int:
    """`files` Codex rollouts under `folder`, laid out as Codex lays them out; returns their
    size in bytes."""
    rng = random.Random(seed)
    total = 0
    for n in range(files):
        path = folder / f"2025/12/{n % 28 + 1:02d}/rollout-2025-12-01T00-00-00-{n:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        total += path.write_bytes(codex_rollout(n, calls, rng).encode())
    return total
