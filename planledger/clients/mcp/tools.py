"""The four plan tools: `update_plan`, `plan_update` (writes), `read_plan`, `plan_history`,
served by the low-level server's `tools/list` and `tools/call` handlers (`ToolCalls`).

Each tool's schemas are ours (not derived from a function signature), and a call's arguments
reach its handler untouched, so every malformed value reaches the ledger, which names each
violation, instead of failing in a generic validator.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from planledger import tools as forms
from planledger.clients.mcp import results
from planledger.clients.mcp.results import ToolFailure
from planledger.clients.mcp.session import BadArgument, codex_call, session_of
from planledger.service import PlanLedger

CLIENT = "mcp"
MAX_ARGUMENT_BYTES = 256 * 1024  # as the HTTP server's body limit: 100 steps of 500 characters fit
SESSION_ID: dict[str, Any] = {
    "type": "string",
    "description": "Optional: the ledger session to use. Leave it out to use this server's "
    "session (the usual case).",
}
# Keys that make a payload the other form: a call of the wrong tool is refused, never recorded.
FORM_KEYS = {"update_plan": frozenset({"plan"}), "plan_update": frozenset({"title", "steps"})}
READ_PLAN_DESCRIPTION = (
    "Read the session's committed plan: its revision, title, steps with their ids and statuses, "
    "the policy (update_plan or plan_update form) and the last rejection. Call it before you "
    "update a plan you did not write in this conversation, after a revision_conflict, or to see "
    "the plan as it stood at an earlier `revision`."
)
PLAN_HISTORY_DESCRIPTION = (
    "Read the audit trail of the session's plan: every proposal, commit (with each step's status "
    "change) and rejection (with its violation codes), in order."
)

log = logging.getLogger(__name__)

Context = ServerRequestContext[Any, Any]
Handler = Callable[[dict[str, Any], Context | None], Awaitable[CallToolResult]]
Meta = Mapping[str, Any] | None
DefaultOf = Callable[[Meta], str]  # the session of a call with this request `_meta`


@dataclass(frozen=True)
class Tool:
    """One tool: what `tools/list` shows of it, and `fn(arguments, ctx)`, which answers a call
    (raising `ToolFailure` for a tool error)."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: ToolAnnotations
    fn: Handler

    def listing(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
        )


class ToolCalls:
    """The low-level server's `tools/list` and `tools/call` handlers over `tools`."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {tool.name: tool for tool in tools}

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return None if tool is None else tool.input_schema

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.listing() for tool in self.tools.values()])

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> CallToolResult:
        """The tool's result; a tool error (`is_error`) when it fails. A protocol error
        (`MCPError`) is left to the server, which answers it as a JSON-RPC error."""
        tool = self.tools.get(params.name)
        if tool is None:
            return error_result(f"Unknown tool: {params.name}")
        try:
            return await tool.fn(dict(params.arguments or {}), ctx)
        except ToolFailure as failure:
            log.info("Tool %r failed: %r", params.name, str(failure))
            return error_result(f"Error executing tool {params.name}: {failure}")
        except MCPError:
            raise
        except Exception:  # a crash: its text stays on the server
            log.exception("Tool %r raised an unexpected exception", params.name)
            return error_result(f"Error executing tool {params.name}")


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def build_tools(service: PlanLedger, default: str | DefaultOf) -> list[Tool]:
    """The four tools over `service`, writing to `default(meta)` unless a call names another
    (it is found, and opened, when a call needs it; `meta`: the request's `_meta`)."""
    default_session: DefaultOf = (lambda _: default) if isinstance(default, str) else default

    async def call(fn: Callable[[], CallToolResult]) -> CallToolResult:
        try:
            return await anyio.to_thread.run_sync(fn)
        except Exception as error:
            raise results.failure(error) from error

    def writer(tool: str) -> Handler:
        async def write(arguments: dict[str, Any], ctx: Context | None = None) -> CallToolResult:
            meta = request_meta(ctx)
            session_id = checked_session(arguments, default_session, meta)
            payload = {key: value for key, value in arguments.items() if key != "session_id"}
            problems = too_large(arguments) or wrong_form(tool, payload)
            if problems:
                raise results.refusal(problems)
            codex = codex_call(meta)  # Codex's call id: a retried call is recorded once
            proposal_id = codex[1] if codex and codex[0] == session_id else None

            def submit() -> CallToolResult:
                decision = service.submit(
                    session_id, payload, client=CLIENT, proposal_id=proposal_id
                )
                committed = decision.status == "committed"
                plan = (
                    service.plan_after(session_id, decision)
                    if committed
                    else service.plan(session_id)
                )
                return results.write_result(tool, decision, session_id, plan)

            return await call(submit)

        return write

    async def read_plan(arguments: dict[str, Any], ctx: Context | None = None) -> CallToolResult:
        only(arguments, {"session_id", "revision"})
        session_id = checked_session(arguments, default_session, request_meta(ctx))
        revision = arguments.get("revision")
        if revision is not None and (
            isinstance(revision, bool) or not isinstance(revision, int) or revision < 0
        ):
            raise results.failure(
                BadArgument("invalid_field", "`revision` must be a whole number >= 0, or left out.")
            )
        return await call(lambda: results.plan_result(service.plan(session_id, revision)))

    async def plan_history(arguments: dict[str, Any], ctx: Context | None = None) -> CallToolResult:
        only(arguments, {"session_id"})
        session_id = checked_session(arguments, default_session, request_meta(ctx))
        return await call(lambda: results.history_result(service.history(session_id)))

    write = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return [
        tool(
            "update_plan",
            "Update the plan (update_plan form)",
            forms.UPDATE_PLAN_DESCRIPTION,
            with_session(forms.UPDATE_PLAN_SCHEMA),
            results.WRITE_OUTPUT_SCHEMA,
            writer("update_plan"),
            write,
        ),
        tool(
            "plan_update",
            "Update the plan (plan_update form)",
            forms.PLAN_UPDATE_DESCRIPTION,
            with_session(forms.PLAN_UPDATE_SCHEMA),
            results.WRITE_OUTPUT_SCHEMA,
            writer("plan_update"),
            write,
        ),
        tool(
            "read_plan",
            "Read the plan",
            READ_PLAN_DESCRIPTION,
            {
                "type": "object",
                "properties": {
                    "session_id": SESSION_ID,
                    "revision": {
                        "type": ["integer", "null"],
                        "minimum": 0,
                        "description": "Optional: show the plan as committed at this revision.",
                    },
                },
                "additionalProperties": False,
            },
            results.PLAN_OUTPUT_SCHEMA,
            read_plan,
            read,
        ),
        tool(
            "plan_history",
            "Read the plan's history",
            PLAN_HISTORY_DESCRIPTION,
            {
                "type": "object",
                "properties": {"session_id": SESSION_ID},
                "additionalProperties": False,
            },
            results.HISTORY_OUTPUT_SCHEMA,
            plan_history,
            read,
        ),
    ]


def tool(
    name: str,
    title: str,
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any],
    handler: Handler,
    annotations: ToolAnnotations,
) -> Tool:
    return Tool(name, title, description, input_schema, output_schema, annotations, handler)


def with_session(schema: dict[str, Any]) -> dict[str, Any]:
    extended = copy.deepcopy(schema)
    extended["properties"]["session_id"] = SESSION_ID
    return extended


def request_meta(ctx: Context | None) -> Meta:
    """The `_meta` of the request being answered (None outside one)."""
    if ctx is None:
        return None
    return dict(ctx.meta) if ctx.meta else None


def checked_session(arguments: Mapping[str, Any], default: DefaultOf, meta: Meta) -> str:
    try:
        if arguments.get("session_id") is None:
            return default(meta)
        return session_of(arguments, "")
    except BadArgument as error:
        raise results.failure(error) from None
    except Exception as error:  # opening the default session met the store (down, say)
        raise results.failure(error) from error


def only(arguments: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = [
        BadArgument(
            "unknown_field",
            f"{str(key)[:60]!r} is not an argument of this tool; use {', '.join(sorted(allowed))}.",
        )
        for key in arguments
        if key not in allowed
    ]
    if unknown:
        raise results.refusal(unknown)


def too_large(arguments: Mapping[str, Any]) -> list[BadArgument]:
    """A call too large to be a plan is refused before it is stored."""
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size <= MAX_ARGUMENT_BYTES:
        return []
    return [
        BadArgument(
            "arguments_too_large",
            f"The arguments take {size} bytes, more than {MAX_ARGUMENT_BYTES}: a plan says what "
            "still needs doing in at most 100 short steps; send that, not notes or output.",
        )
    ]


def wrong_form(tool: str, payload: Mapping[str, Any]) -> list[BadArgument]:
    """Problems that make the call unreadable as this tool's form (so it is not a proposal)."""
    other = "plan_update" if tool == "update_plan" else "update_plan"
    problems = [
        BadArgument(
            "unknown_field",
            f"`{key}` belongs to the {other} tool; {tool} takes "
            f"{', '.join(sorted(forms.TOOLS[tool][1]['properties']))} and session_id.",
        )
        for key in sorted(FORM_KEYS[other] & payload.keys())
    ]
    if not FORM_KEYS[tool] & payload.keys():
        needs = (
            "`plan`, the complete list of {step, status}"
            if tool == "update_plan"
            else ("`title` and `steps`, the complete list of {id, title, status}")
        )
        problems.insert(0, BadArgument("missing_field", f"{tool} needs {needs}."))
    return problems
