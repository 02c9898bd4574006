"""Which ledger session a tool call writes to: the call's, else `--session`, else the calling
agent's session where the agent shows which it is in, else one of our own (one per process)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from domain.errors import SessionExists
from planledger.importers.gemini import gemini_config, recorded_session
from planledger.service import PlanLedger

CODEX_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")


class BadArgument(ValueError):
    """A tool argument of the wrong type or value, named by a violation code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def new_session_id(now: datetime | None = None) -> str:
    """`mcp-<UTC yyyymmddThhmmss>-<6 hex>`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"mcp-{moment:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def start_session(service: PlanLedger, requested: str | None) -> str:
    """The server's default session: `requested` (opened if missing), else a new one."""
    session_id = requested or new_session_id()
    try:
        service.open_session(session_id, source="mcp")
    except SessionExists:
        if requested is None:  # a clash of two fresh names: astronomically unlikely, try again
            return start_session(service, None)
    return session_id


def session_of(arguments: Mapping[str, Any], default: str) -> str:
    """The call's `session_id` if it gives one (its existence is the service's to check)."""
    value = arguments.get("session_id")
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadArgument(
            "invalid_field",
            "`session_id` must be a string naming an open session, or left out to use this "
            "server's session.",
        )
    return value


def agent_session(env: Mapping[str, str], cwd: Path, home: Path) -> str | None:
    """The ledger session of the agent that started this server, where it tells or shows it
    (None: it does not). Gemini CLI 0.61 tells an MCP server nothing of its session (its
    environment has `GEMINI_CLI=1`, `clientInfo` is `gemini-cli-mcp-client`, a call's `_meta`
    only a progress token): its session is the one whose chat recording of this project folder
    was written last, `gemini-<sessionId>` as the hooks name it."""
    if env.get("CLAUDE_CODE_SESSION_ID"):  # Claude Code 2.1.332 gives its servers its session
        from planledger.clients.hooks.claude_code import task_list_session

        return task_list_session(env, env["CLAUDE_CODE_SESSION_ID"])
    if env.get("GEMINI_SESSION_ID"):
        return f"gemini-{env['GEMINI_SESSION_ID']}"
    if env.get("GEMINI_CLI") == "1":
        return gemini_recorded_session(cwd, gemini_config(env, home))
    return None


def gemini_recorded_session(cwd: Path, config: Path) -> str | None:
    """`gemini-<sessionId>` of the newest chat recording of the project at `cwd`."""
    try:
        projects = json.loads((config / "projects.json").read_text()).get("projects", {})
    except (OSError, ValueError, AttributeError):
        return None
    short = projects.get(str(cwd)) if isinstance(projects, dict) else None
    if not isinstance(short, str):
        return None
    chats = sorted(
        (config / "tmp" / short / "chats").glob("*.json*"), key=lambda path: path.stat().st_mtime
    )
    for chat in reversed(chats):
        session = recorded_session(chat)
        if session is not None:
            return f"gemini-{session}"
    return None


def codex_call(meta: Mapping[str, Any] | None) -> tuple[str, str | None] | None:
    """(`codex-<thread_id>`, the call id) of a call from Codex, which 0.171 names in each
    `tools/call`'s `_meta` (`x-codex-turn-metadata.thread_id`, `callId`): the session its hooks
    and the rollout's import write, and the id the rollout gives the call."""
    turn = meta.get("x-codex-turn-metadata") if meta else None
    if not isinstance(turn, dict):
        return None
    thread = turn.get("thread_id") or turn.get("session_id")
    if not isinstance(thread, str) or not CODEX_ID.fullmatch(thread):
        return None
    call_id = meta.get("callId") if meta else None
    valid_call = isinstance(call_id, str) and CODEX_ID.fullmatch(call_id)
    return f"codex-{thread}", call_id if valid_call else None


class DefaultSession:
    """This server's session, found when a call needs it (a tool listing opens none): the one
    asked for, else the calling agent's, else one new `mcp-...` session for the process."""

    def __init__(
        self, service: PlanLedger, requested: str | None, find: Callable[[], str | None]
    ) -> None:
        self.service, self.requested, self.find = service, requested, find
        self._own: str | None = None
        self._lock = threading.Lock()

    def __call__(self, meta: Mapping[str, Any] | None = None) -> str:
        """The session of a call with request `_meta` `meta`."""
        if self.requested is not None:
            return start_session(self.service, self.requested)
        codex = codex_call(meta)
        found = codex[0] if codex else self.find()
        if found is not None:
            prefix = found.split("-", 1)[0]
            source = {"claude": "claude-code"}.get(prefix, prefix)  # as the agents' hooks say
            with contextlib.suppress(SessionExists):  # the agent's hooks may have opened it
                self.service.open_session(found, source=source)
            return found
        with self._lock:
            if self._own is None:
                self._own = start_session(self.service, None)
            return self._own


def calling_agent() -> str | None:
    return agent_session(os.environ, Path.cwd(), Path.home())
