"""`planledger mcp`: the server wired together and run over stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus

from planledger.clients.mcp.session import DefaultSession, calling_agent
from planledger.clients.mcp.stdio import run_stdio
from planledger.clients.mcp.subscriptions import PlanSubscriptions, plan_uri
from planledger.clients.mcp.tools import build_tools
from planledger.service import PlanLedger, open_planledger

INSTRUCTIONS = """\
plan ledger keeps your plan durable, validated and audited. Record your plan with update_plan \
(a list of {step, status}) or plan_update (a title and steps with ids), send the complete plan \
each time a step changes, and fix every violation a refused call names. read_plan shows the \
committed plan (also after a context compaction); plan_history shows every proposal, commit and \
rejection. Resource plan://<session_id> is the plan as JSON, with live updates."""


def build_server(service: PlanLedger, session: str | DefaultSession) -> MCPServer[None]:
    """The MCP server over `service`, whose tools write to `session` by default (a
    DefaultSession: found when a call needs it; its resource is there when it was asked for)."""
    bus = InMemorySubscriptionBus()
    subscriptions = PlanSubscriptions(service, bus)

    @asynccontextmanager
    async def follow_the_ledger(_: MCPServer[None]) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(subscriptions.follow)
            yield
            tasks.cancel_scope.cancel()

    server: MCPServer[None] = MCPServer(
        "planledger",
        title="plan ledger",
        instructions=INSTRUCTIONS,
        version=package_version(),
        tools=build_tools(service, session),
        subscriptions=bus,
        lifespan=follow_the_ledger,
        log_level="WARNING",
    )
    subscriptions.register(server)
    session_id = session if isinstance(session, str) else session.requested
    if session_id is None:
        return server

    @server.resource(
        plan_uri(session_id),
        name="this-session-plan",
        title=f"Plan of session {session_id}",
        description="This server's session: the plan view as JSON.",
        mime_type="application/json",
    )
    async def this_session_plan() -> str:
        assert session_id is not None
        return await subscriptions.read(session_id)

    return server


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("plan-ledger")
    except PackageNotFoundError:
        return "0"


def serve_stdio(database: str | None, session_id: str | None) -> None:
    """Open the service, then serve MCP (the session: `session_id`, opened if missing, else the
    calling agent's, else one fresh `mcp-...` one, opened when a call first needs it) on
    stdin/stdout until the client closes them (every line that is not a message answered with
    a JSON-RPC error)."""
    service = open_planledger(database)
    try:
        session = DefaultSession(service, session_id, calling_agent)
        if session_id is not None:
            session()  # opened now, as asked
        anyio.run(run_stdio, build_server(service, session))
    finally:
        service.close()
