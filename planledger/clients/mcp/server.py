"""`planledger mcp`: the server wired together and run over stdio."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError

from planledger.clients.mcp.session import DefaultSession, calling_agent
from planledger.clients.mcp.stdio import run_stdio
from planledger.clients.mcp.subscriptions import PlanSubscriptions
from planledger.clients.mcp.tools import Context, ToolCalls, build_tools
from planledger.service import PlanLedger, open_planledger

INSTRUCTIONS = """\
plan ledger keeps your plan durable, validated and audited. Record your plan with update_plan \
(a list of {step, status}) or plan_update (a title and steps with ids), send the complete plan \
each time a step changes, and fix every violation a refused call names. read_plan shows the \
committed plan (also after a context compaction); plan_history shows every proposal, commit and \
rejection. Resource plan://<session_id> is the plan as JSON, with live updates."""


def build_server(service: PlanLedger, session: str | DefaultSession) -> Server[None]:
    """The MCP server over `service`, whose tools write to `session` by default (a
    DefaultSession: found when a call needs it; its resource is there when it was asked for).

    Built on the SDK's low-level server: the tools' schemas are ours, and the resources
    answer `resources/subscribe` (MCPServer takes neither)."""
    bus = InMemorySubscriptionBus()
    session_id = session if isinstance(session, str) else session.requested
    resources = PlanSubscriptions(service, bus, this_session=session_id)
    tools = ToolCalls(build_tools(service, session))

    @asynccontextmanager
    async def follow_the_ledger(_: Server[None]) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(resources.follow)
            yield
            tasks.cancel_scope.cancel()

    return Server(
        "planledger",
        title="plan ledger",
        instructions=INSTRUCTIONS,
        version=package_version(),
        lifespan=follow_the_ledger,
        get_tool_input_schema=tools.input_schema,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_resources=resources.list_resources,
        on_list_resource_templates=resources.list_templates,
        on_read_resource=resources.read_resource,
        on_subscribe_resource=resources.subscribe,
        on_unsubscribe_resource=resources.unsubscribe,
        on_subscriptions_listen=ListenHandler(bus),
        on_list_prompts=no_prompts,
        on_get_prompt=no_prompt,
    )


async def no_prompts(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[])


async def no_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")


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
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    service = open_planledger(database)
    try:
        session = DefaultSession(service, session_id, calling_agent)
        if session_id is not None:
            session()  # opened now, as asked
        anyio.run(run_stdio, build_server(service, session))
    finally:
        service.close()
