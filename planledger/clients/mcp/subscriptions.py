"""Resource `plan://{session_id}` (the plan view as JSON) and its live updates.

A client subscribes with `resources/subscribe` (or, on the 2026 protocol, `subscriptions/listen`);
one background task follows the ledger's feed from the store position at start and sends
`notifications/resources/updated` for every commit (or rejection) of a subscribed session, by any
writer, in this process or another.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    EmptyResult,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from domain.errors import LedgerError, SessionNotFound
from planledger.service import PlanLedger

SCHEME = "plan://"
TEMPLATE = "plan://{session_id}"
MIME_TYPE = "application/json"
NOTIFY_KINDS = frozenset({"committed", "rejected"})
RETRY_SECONDS = 0.5

log = logging.getLogger(__name__)
Context = ServerRequestContext[Any, Any]


def plan_uri(session_id: str) -> str:
    return f"{SCHEME}{session_id}"


class PlanSubscriptions:
    """The `plan://` resources, which plans the client subscribed to, and the feed task that
    tells it of each change (the low-level server's resource handlers).

    stdio serves one client, so the subscriptions are a set of session ids, and notifications
    go out through the client's connection (reached via the session of its latest subscribe).
    `this_session`: the server's own session, listed as a resource of its own.
    """

    def __init__(
        self, service: PlanLedger, bus: InMemorySubscriptionBus, this_session: str | None = None
    ) -> None:
        self.service = service
        self.bus = bus
        self.this_session = this_session
        self.template = UriTemplate.parse(TEMPLATE)
        self.subscribed: set[str] = set()
        self.client: ServerSession | None = None

    async def list_resources(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        session_id = self.this_session
        if session_id is None:
            return types.ListResourcesResult(resources=[])
        resource = types.Resource(
            uri=plan_uri(session_id),
            name="this-session-plan",
            title=f"Plan of session {session_id}",
            description="This server's session: the plan view as JSON.",
            mime_type=MIME_TYPE,
        )
        return types.ListResourcesResult(resources=[resource])

    async def list_templates(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="plan",
            title="Session plan",
            description="The session's plan view as JSON (revision, title, steps, policy, "
            "the last rejection); subscribe to hear of every commit.",
            mime_type=MIME_TYPE,
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """`plan://ID`: the plan view as JSON. A protocol error names what went wrong: an
        unknown resource or session is invalid params, any other failure an internal error."""
        uri = str(params.uri)
        found = self.template.match(uri)
        session_id = found.get("session_id") if found is not None else None
        if not isinstance(session_id, str):
            raise MCPError(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        try:
            text = await self.read(session_id)
        except SessionNotFound as error:
            raise MCPError(INVALID_PARAMS, error.message, {"uri": uri}) from None
        except LedgerError as error:
            raise MCPError(INTERNAL_ERROR, f"{error.code}: {error.message}", {"uri": uri}) from None
        except Exception as error:
            log.exception("reading resource %r failed", uri)
            raise MCPError(INTERNAL_ERROR, f"Error reading resource {uri}", {"uri": uri}) from error
        contents = types.TextResourceContents(uri=uri, text=text, mime_type=MIME_TYPE)
        return types.ReadResourceResult(contents=[contents])

    async def read(self, session_id: str) -> str:
        view = await anyio.to_thread.run_sync(self.service.plan, session_id)
        return json.dumps(view.model_dump(mode="json", by_alias=True))

    async def subscribe(self, ctx: Context, params: SubscribeRequestParams) -> EmptyResult:
        session_id = self.session_of(str(params.uri))
        try:
            await anyio.to_thread.run_sync(self.service.session, session_id)
        except LedgerError as error:
            raise MCPError(INVALID_PARAMS, f"{error.code}: {error.message}") from None
        self.subscribed.add(session_id)
        self.client = ctx.session
        return EmptyResult()

    async def unsubscribe(self, ctx: Context, params: UnsubscribeRequestParams) -> EmptyResult:
        session_id = self.session_of(str(params.uri))
        self.subscribed.discard(session_id)
        return EmptyResult()

    @staticmethod
    def session_of(uri: str) -> str:
        if not uri.startswith(SCHEME) or len(uri) == len(SCHEME):
            raise MCPError(INVALID_PARAMS, f"not a plan resource: {uri[:200]!r} (use plan://ID)")
        return uri.removeprefix(SCHEME)

    async def notify(self, session_id: str) -> None:
        """Tell every subscriber of the session (and every listen stream) its plan changed."""
        uri = plan_uri(session_id)
        await self.bus.publish(ResourceUpdated(uri=uri))
        if self.client is not None and session_id in self.subscribed:
            try:
                await self.client.send_resource_updated(uri)
            except Exception:  # the client went away
                self.client = None

    async def start_position(self) -> int:
        """The store position now (waiting for the database if it is down)."""
        while True:
            health = await anyio.to_thread.run_sync(self.service.health)
            if health.error is None:
                return health.store_position
            print(f"planledger mcp: live updates waiting: {health.error}", file=sys.stderr)
            await anyio.sleep(RETRY_SECONDS)

    async def follow(self) -> None:
        """Follow the ledger's feed from the store position now, forever; on a database error,
        say so on stderr and resume from the last position seen."""
        after = await self.start_position()
        while True:
            try:
                async for event in self.service.follow(None, after=after):
                    after = event.store_position
                    if event.kind in NOTIFY_KINDS:
                        await self.notify(event.session_id)
            except Exception as error:
                print(f"planledger mcp: live updates paused: {error}", file=sys.stderr)
                await anyio.sleep(RETRY_SECONDS)
