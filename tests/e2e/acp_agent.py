"""A scripted ACP agent built with the SDK, for the proxy tests and the benchmark.

Run as `python tests/e2e/acp_agent.py`. Each prompt's text picks a script:
- `plans`: a valid plan, a message, an invalid plan (two steps in progress), a valid plan;
- `plan`: one valid plan (the benchmark's);
- `tools`: a permission request, fs reads and writes, a terminal, each answer echoed back;
- `ext`: an extension request and notification to the editor;
- `wait`: a message, then waits for `session/cancel` (stop reason `cancelled`);
- `exit N`: the process exits with status N; `crash`: the process kills itself (SIGKILL).
`session/load` of a session it made replays every plan it sent there, in order, as agents do
when they load a session, before answering.
Extension requests from the editor: `scripted/echo` answers its params; any other method is
`method not found`. With ACP_AGENT_LOG set, every message the agent receives is appended to
that file as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Client,
    RequestError,
    plan_entry,
    run_agent,
    update_agent_message_text,
    update_plan,
)
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

FIRST_PLAN = [
    plan_entry("Inspect the failing test", priority="high", status="in_progress"),
    plan_entry("Fix the parser", priority="medium", status="pending"),
    plan_entry("Update the docs", priority="low", status="pending"),
]
INVALID_PLAN = [
    plan_entry("Inspect the failing test", priority="high", status="in_progress"),
    plan_entry("Fix the parser", priority="medium", status="in_progress"),
]
LAST_PLAN = [
    plan_entry("Inspect the failing test", priority="high", status="completed"),
    plan_entry("Fix the parser", priority="medium", status="in_progress"),
    plan_entry("Update the docs", priority="low", status="pending"),
]


class ScriptedAgent:
    def __init__(self) -> None:
        self.conn: Client | None = None
        self.sessions = 0
        self.cancelled: dict[str, asyncio.Event] = {}
        self.sent: dict[str, list[Any]] = {}  # session -> the plans sent there, in order

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="scripted", version="1"),
        )

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        assert self.conn is not None
        if session_id not in self.sent:
            raise RequestError.resource_not_found(session_id)
        for entries in self.sent[session_id]:
            await self.conn.session_update(session_id, update_plan(entries))
        return LoadSessionResponse()

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        self.sessions += 1
        session_id = f"scripted-{self.sessions}"
        self.cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **_: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "scripted/echo":
            return {"echo": params}
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        assert self.conn is not None
        conn = self.conn
        text = "".join(getattr(block, "text", "") for block in prompt).strip()

        async def say(message: str) -> None:
            await conn.session_update(session_id, update_agent_message_text(message))

        async def plan(entries: list[Any]) -> None:
            self.sent.setdefault(session_id, []).append(entries)
            await conn.session_update(session_id, update_plan(entries))

        if text == "plan":
            await plan(FIRST_PLAN)
        elif text == "plans":
            await plan(FIRST_PLAN)
            await say("working on it")
            await plan(INVALID_PLAN)
            await plan(LAST_PLAN)
        elif text == "tools":
            await self._tools(conn, session_id, say)
        elif text == "ext":
            answer = await conn.ext_method("scripted.dev/ask", {"question": 42})
            await conn.ext_notification("scripted.dev/note", {"seen": answer})
            await say(f"editor answered {json.dumps(answer, sort_keys=True)}")
        elif text == "wait":
            await say("waiting")
            await self.cancelled.setdefault(session_id, asyncio.Event()).wait()
            return PromptResponse(stop_reason="cancelled")
        elif text.startswith("exit "):
            os._exit(int(text.split()[1]))
        elif text == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        return PromptResponse(stop_reason="end_turn")

    @staticmethod
    async def _tools(conn: Client, session_id: str, say: Any) -> None:
        permission = await conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="call-1", title="Edit parser.py"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        await say(f"permission: {permission.outcome.model_dump_json(by_alias=True)}")
        read = await conn.read_text_file(session_id=session_id, path="/src/parser.py")
        await say(f"read: {read.content}")
        await conn.write_text_file(session_id=session_id, path="/src/parser.py", content="fixed")
        terminal = await conn.create_terminal(session_id=session_id, command="make", args=["test"])
        exited = await conn.wait_for_terminal_exit(
            session_id=session_id, terminal_id=terminal.terminal_id
        )
        await conn.release_terminal(session_id=session_id, terminal_id=terminal.terminal_id)
        await say(f"terminal {terminal.terminal_id} exited {exited.exit_code}")


def main() -> None:
    log_path = os.environ.get("ACP_AGENT_LOG")
    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115

    def record(event: StreamEvent) -> None:
        if log is not None and event.direction is StreamDirection.INCOMING:
            log.write(json.dumps(event.message, sort_keys=True) + "\n")
            log.flush()

    try:
        asyncio.run(run_agent(ScriptedAgent(), observers=[record]))  # type: ignore[arg-type]
    finally:
        if log is not None:
            log.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
