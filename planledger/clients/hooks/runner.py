"""The fail-open runner: one JSON event on stdin, the agent's answer on stdout, exit 0 always.

Any internal error (bad event, database down, a bug) becomes one line on stderr and no answer, so
a broken ledger never stops the agent's work.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from planledger.service import PlanLedger

Event = dict[str, Any]
Answer = dict[str, Any] | None

AGENT_MODULES = {
    "claude-code": "planledger.clients.hooks.claude_code",
    "gemini": "planledger.clients.hooks.gemini",
    "codex": "planledger.clients.hooks.codex",
}


class HookInputError(ValueError):
    """The event on stdin is not what the agent's hook protocol sends."""


class LazyService:
    """The service, opened on first call only: ignored events never touch the database."""

    def __init__(self, database: str | None) -> None:
        self.database = database
        self._service: PlanLedger | None = None

    def __call__(self) -> PlanLedger:
        if self._service is None:
            from planledger.service import open_planledger

            self._service = open_planledger(self.database)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            service, self._service = self._service, None
            service.close()


Handler = Callable[[Event, LazyService], Answer]


def read_event(stream: TextIO) -> Event:
    """The one JSON object the agent writes on stdin."""
    text = stream.read()
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        raise HookInputError(f"the event on stdin is not JSON ({error})") from None
    if not isinstance(event, dict):
        raise HookInputError("the event on stdin is not a JSON object")
    return event


def one_line(error: BaseException) -> str:
    """An error as one line of at most 300 characters."""
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def run_hook(
    agent: str,
    database: str | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Handle one event for `agent`; always returns 0 (the exit code)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    service = LazyService(database)
    try:
        try:
            handle: Handler = importlib.import_module(AGENT_MODULES[agent]).handle
            answer = handle(read_event(stdin), service)
        finally:
            service.close()
        if answer is not None:
            stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
            stdout.flush()
    except Exception as error:
        stderr.write(f"planledger hook {agent}: {one_line(error)}\n")
        stderr.flush()
    return 0
