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

import anyio
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from domain.errors import LedgerError, SessionNotFound
from planledger.service import PlanLedger

SCHEME = "plan://"
NOTIFY_KINDS = frozenset({"committed", "rejected"})
RETRY_SECONDS = 0.5

log = logging.getLogger(__name__)


def plan_uri(session_id: str) -> str:
    return f"{SCHEME}{session_id}"


class PlanSubscriptions:
    """Which plans the client subscribed to, and the feed task that tells it of each change.

    stdio serves one client, so the subscriptions are a set of session ids, and notifications
    go out through the client's connection (reached via the session of its latest subscribe).
    """

    def __init__(self, service: PlanLedger, bus: InMemorySubscriptionBus) -> None:
        self.service = service
        self.bus = bus
        self.subscribed: set[str] = set()
        self.client: ServerSession | None = None

    def register(self, server: MCPServer) -> None:
        """Serve the resource template and the handshake-era subscribe/unsubscribe requests."""

        @server.resource(
            "plan://{session_id}",
            name="plan",
            title="Session plan",
            description="The session's plan view as JSON (revision, title, steps, policy, "
            "the last rejection); subscribe to hear of every commit.",
            mime_type="application/json",
            security=ResourceSecurity(exempt_params={"session_id"}),  # ids are checked by us
        )
        async def read_plan(session_id: str) -> str:
            return await self.read(session_id)

        # MCPServer has no public hook for resources/subscribe: register it on its low-level server.
        lowlevel = server._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        lowlevel.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe
        )

    async def read(self, session_id: str) -> str:
        try:
            view = await anyio.to_thread.run_sync(self.service.plan, session_id)
        except SessionNotFound as error:
            raise ResourceNotFoundError(error.message) from None
        except LedgerError as error:
            raise ResourceError(f"{error.code}: {error.message}") from None
        return json.dumps(view.model_dump(mode="json", by_alias=True))

    async def subscribe(
        self, ctx: ServerRequestContext, params: SubscribeRequestParams
    ) -> EmptyResult:
        session_id = self.session_of(str(params.uri))
        try:
            await anyio.to_thread.run_sync(self.service.session, session_id)
        except LedgerError as error:
            raise MCPError(INVALID_PARAMS, f"{error.code}: {error.message}") from None
        self.subscribed.add(session_id)
        self.client = ctx.session
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext, params: UnsubscribeRequestParams
    ) -> EmptyResult:
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
