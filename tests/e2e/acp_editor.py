"""The editor side of the ACP tests: the SDK's client, recording everything it receives."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentPlanUpdate,
    AllowedOutcome,
    CreateTerminalResponse,
    PermissionOption,
    PlanEntry,
    PromptResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SessionNotification,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

AGENT_SCRIPT = Path(__file__).with_name("acp_agent.py")


class Editor:
    """An ACP client as an editor would be: answers permission, fs and terminal calls, and
    keeps every raw message it receives, in order."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []

    def observe(self, event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING:
            self.received.append(event.message)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id)
        )

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=f"contents of {path}")

    async def write_text_file(self, **_: Any) -> WriteTextFileResponse:
        return WriteTextFileResponse()

    async def create_terminal(self, command: str, **_: Any) -> CreateTerminalResponse:
        return CreateTerminalResponse(terminal_id=f"term-{command}")

    async def wait_for_terminal_exit(self, **_: Any) -> WaitForTerminalExitResponse:
        return WaitForTerminalExitResponse(exit_code=0)

    async def release_terminal(self, **_: Any) -> ReleaseTerminalResponse:
        return ReleaseTerminalResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"method": method, "answer": params}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- what was received --------------------------------------------------------------------

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The `update` objects of every session/update notification, in order."""
        return [
            m["params"]["update"]
            for m in self.received
            if m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    def plans(self, session_id: str | None = None) -> list[list[dict[str, Any]]]:
        """The entries of every plan update, each validated against the SDK's schema."""
        plans = []
        for message in self.received:
            if message.get("method") != "session/update":
                continue
            if message["params"]["update"].get("sessionUpdate") != "plan":
                continue
            if session_id is not None and message["params"]["sessionId"] != session_id:
                continue
            assert_valid_plan_notification(message["params"])
            plans.append(message["params"]["update"]["entries"])
        return plans

    def texts(self, session_id: str | None = None) -> list[str]:
        return [
            u["content"]["text"]
            for u in self.updates(session_id)
            if u.get("sessionUpdate") == "agent_message_chunk"
        ]


def assert_valid_plan_notification(params: dict[str, Any]) -> None:
    """A plan notification as the SDK's models read it, every entry kept (the SDK silently
    drops invalid entries, so each is validated on its own too)."""
    notification = SessionNotification.model_validate(params)
    assert isinstance(notification.update, AgentPlanUpdate)
    entries = params["update"]["entries"]
    assert len(notification.update.entries) == len(entries)
    for entry in entries:
        PlanEntry.model_validate(entry)
        assert set(entry) == {"content", "priority", "status"}


def planledger_env(home: Path, database: str) -> dict[str, str]:
    return {
        "PLANLEDGER_HOME": str(home),
        "PLANLEDGER_DATABASE_URL": database,
        "PATH": os.environ.get("PATH", ""),
    }


@asynccontextmanager
async def connect(
    command: str, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process, Editor]]:
    """An agent process and the editor's connection to it, initialised."""
    editor = Editor()
    async with spawn_agent_process(
        editor,
        command,
        *args,
        env=env,
        transport_kwargs={"stderr": None, "shutdown_timeout": 10.0},
        observers=[editor.observe],
    ) as (conn, process):
        yield conn, process, editor


def scripted_agent_command() -> list[str]:
    return [sys.executable, str(AGENT_SCRIPT)]


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> PromptResponse:
    return await conn.prompt(session_id=session_id, prompt=[text_block(text)])


async def initialize(conn: ClientSideConnection) -> Any:
    return await conn.initialize(protocol_version=PROTOCOL_VERSION)


async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> float:
    """Poll `condition` until it holds; the seconds it took. Fails after `timeout`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(0.005)
    return time.monotonic() - started
