"""The fail-open runner: one JSON event on stdin, the agent's answer on stdout, exit 0.

Any internal error (bad event, database down, a bug) becomes one line on stderr and no answer, so
a broken ledger never stops the agent's work. The one exception is a `Refusal`: the rules refuse
what the event asks (Claude Code's `TaskCompleted`), said on stderr with exit 2.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from planledger.clients.hooks import guard
from planledger.clients.hooks.guard import DEADLINE_ENV, Deadline, check_reachable, deadline_seconds

if TYPE_CHECKING:
    from planledger.service import PlanLedger

Event = dict[str, Any]
Answer = dict[str, Any] | None

AGENT_MODULES = {
    "claude-code": "planledger.clients.hooks.claude_code",
    "gemini": "planledger.clients.hooks.gemini",
    "codex": "planledger.clients.hooks.codex",
    "opencode": "planledger.clients.hooks.opencode",
}


class HookInputError(ValueError):
    """The event on stdin is not what the agent's hook protocol sends."""


class Refusal(Exception):
    """The rules refuse what the event asks: its message goes to stderr, the exit code is 2."""


REFUSED = 2


class HookContext:
    """What a handler gets beside the event: the service, opened on first use only (ignored
    events never touch the database), and a place for warnings that do not stop the answer."""

    def __init__(self, database: str | None) -> None:
        self.database = database
        self.warnings: list[str] = []
        self._service: PlanLedger | None = None

    def service(self) -> PlanLedger:
        if self._service is None:
            from planledger.service import open_planledger

            check_reachable(self.database)
            self._service = open_planledger(self.database)
        return self._service

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def close(self) -> None:
        if self._service is not None:
            service, self._service = self._service, None
            service.close()
            self.warnings += service.warnings


Handler = Callable[[Event, HookContext], Answer]


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
    """Handle one event for `agent`; returns the exit code: 0, or 2 for a `Refusal`.

    The agent module gives `handle(event, context)` and `DEADLINE_SECONDS`, the time after which
    the hook gives up (PLANLEDGER_HOOK_DEADLINE overrides it); `deadline_for(event)`, when it
    has one, gives the time for that event instead."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr

    def give_up(seconds: float) -> None:
        stderr.write(
            f"planledger hook {agent}: gave up after {seconds:g} s without an answer; the agent "
            f"goes on ({DEADLINE_ENV} sets the limit)\n"
        )
        stderr.flush()
        os._exit(0)  # the work may be stuck in a call that cannot be interrupted

    context = HookContext(database)
    code = 0
    try:
        if agent not in AGENT_MODULES:
            raise HookInputError(f"unknown agent {agent!r}: use {', '.join(AGENT_MODULES)}")
        module = importlib.import_module(AGENT_MODULES[agent])
        handle: Handler = module.handle
        event = read_event(stdin)
        seconds = getattr(module, "deadline_for", lambda _: module.DEADLINE_SECONDS)(event)
        limit = deadline_seconds(seconds)
        with Deadline(guard.time_left(limit), lambda _: give_up(limit)):
            try:
                answer = handle(event, context)
            except Refusal as refusal:
                answer, code = None, REFUSED
                stderr.write(f"{refusal}\n")
            finally:
                context.close()
        if answer is not None:
            stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
            stdout.flush()
        if context.warnings:
            warnings = " ".join("; ".join(context.warnings).split())[:600]
            stderr.write(f"planledger hook {agent}: {warnings}\n")
    except Exception as error:
        stderr.write(f"planledger hook {agent}: {one_line(error)}\n")
    stderr.flush()
    return code
