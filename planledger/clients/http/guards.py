"""ASGI guards in front of every route: the bearer token, the body size cap and read deadline."""

from __future__ import annotations

import asyncio
import functools
import hmac
import time
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool

from planledger.clients.http.errors import (
    BodyTooLarge,
    error_response,
    forbidden,
    too_large,
    unauthorized,
    unavailable,
)
from planledger.service import PlanLedger
from planledger.service.tokens import ENV_TOKEN_NAME, PREFIX, Grant
from planledger.service.tokens import Scope as TokenScope

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz"})
TOKEN_COOKIE = "planledger_token"
# The web pages that turn `?token=` into a cookie (web.routes.token_handoff): the only paths
# whose query the guard reads a token from.
HANDOFF_PAGE, HANDOFF_PAGES = "/ui", "/ui/sessions/"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
GRANT_TTL = 1.0  # seconds a token's grant (or that no named token is in use) is trusted
STALE_WAIT = 0.25  # seconds to wait for the store before what it said last stands
IN_USE = ""  # the key under which the guard keeps whether the store has named tokens in use
MAX_GRANTS_KEPT = 1024  # distinct tokens remembered (a flood of wrong ones clears them)
BODY_TIMEOUT = 10.0  # seconds to receive a whole request body (a plan is at most 256 KiB)


class TokenGuard:
    """With a token required, every path but /healthz needs `Authorization: Bearer <token>`:
    the server's own token (`PLANLEDGER_TOKEN`, compared in constant time, an admin token) or
    a named token of the store (planledger.service.tokens). A token is required when the
    server has its own or the store has a named one in use. A browser may instead open a web
    page once with `?token=...`: the page then keeps it in a cookie, which is accepted
    everywhere. An API URL never carries the token (it would end up in logs and histories).

    A `read` token gets 403 on every method that writes. The name of the token that let a
    request in is its `actor` (request.state.actor). What the store says of a token is kept
    for GRANT_TTL seconds: a revoked token is refused within that time."""

    def __init__(self, app: App, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None
        # What the store said, and when: of a token (its grant), or of IN_USE (a bool).
        self.known: dict[str, tuple[float, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        try:
            grant, from_query = await self._grant(scope)
            required = (
                grant is not None
                or self.token is not None
                or await self._store_says(scope, IN_USE, service(scope).tokens_in_use)
            )
        except Exception as error:  # the store cannot say who may come in: nobody does
            await unavailable(error)(scope, receive, send)
            return
        if not required:
            await self.app(scope, receive, send)
            return
        if grant is None:
            await unauthorized()(scope, receive, send)
            return
        if not grant.may_write and scope.get("method") not in READ_METHODS:
            await forbidden(grant.name)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["actor"] = grant.name
        if from_query is not None:
            state["handoff_token"] = from_query
        await self.app(scope, receive, send)

    async def _grant(self, scope: Scope) -> tuple[Grant | None, str | None]:
        """The grant of the request's token, and the token when it came from a handoff
        page's query."""
        for candidate, from_query in candidates(scope):
            if self.token is not None and hmac.compare_digest(candidate.encode(), self.token):
                return Grant(ENV_TOKEN_NAME, TokenScope.ADMIN), candidate if from_query else None
            if not candidate.startswith(PREFIX):  # not a named token: no look-up
                continue
            lookup = functools.partial(service(scope).grant_of, candidate)
            grant: Grant | None = await self._store_says(scope, candidate, lookup)
            if grant is not None:
                return grant, candidate if from_query else None
        return None, None

    async def _store_says(self, scope: Scope, key: str, lookup: Callable[[], Any]) -> Any:
        """What the store says of `key`, asked again once GRANT_TTL seconds old. While the store
        does not answer within STALE_WAIT, what it said last stands (nobody can add or revoke a
        token in a store that is away; the route then answers as it does in an outage);
        nothing said yet: the lookup's error."""
        now = time.monotonic()
        known = self.known.get(key)
        if known is not None and now - known[0] < GRANT_TTL:
            return known[1]
        asked = asyncio.ensure_future(run_in_threadpool(lookup))

        def remember(done: asyncio.Future[Any]) -> None:
            if not done.cancelled() and done.exception() is None:
                if len(self.known) >= MAX_GRANTS_KEPT:
                    self.known.clear()
                self.known[key] = (now, done.result())

        asked.add_done_callback(remember)
        if known is None:
            return await asked
        try:
            return await asyncio.wait_for(asyncio.shield(asked), STALE_WAIT)
        except Exception:  # (TimeoutError included)
            return known[1]


def service(scope: Scope) -> PlanLedger:
    found: PlanLedger = scope["app"].state.service
    return found


def candidates(scope: Scope) -> list[tuple[str, bool]]:
    """The tokens a request carries, each with whether it came from a handoff page's query."""
    headers = dict(scope.get("headers") or [])
    scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() == "bearer":
        return [(given, False)]
    found = []
    cookie = SimpleCookie(headers.get(b"cookie", b"").decode("latin-1"))
    if TOKEN_COOKIE in cookie:
        found.append((cookie[TOKEN_COOKIE].value, False))
    if is_handoff_page(scope["path"]):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        found += [(token, True) for token in query.get("token", [])[:1]]
    return found


def is_handoff_page(path: str) -> bool:
    return path == HANDOFF_PAGE or path.startswith(HANDOFF_PAGES)


class BodyLimit:
    """Refuse request bodies over `limit` bytes (413), declared or streamed, and bodies not
    received in full within `timeout` seconds of the request (408): a client trickling its
    body is cut off instead of holding the connection forever. The body is read here, before
    the application sees the request, then handed to it whole."""

    def __init__(self, app: App, limit: int, timeout: float = BODY_TIMEOUT) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await too_large(self.limit)(scope, receive, send)
            return
        try:
            async with asyncio.timeout(self.timeout):  # no task per request, as wait_for makes
                message = await self._read_body(receive)
        except BodyTooLarge:
            await too_large(self.limit)(scope, receive, send)
            return
        except TimeoutError:
            await error_response(
                408,
                "body_timeout",
                f"the request body was not received within {self.timeout:g} s",
                headers={"Connection": "close"},
            )(scope, receive, send)
            return
        delivered = False

        async def replay() -> Any:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return message

        await self.app(scope, replay, send)

    async def _read_body(self, receive: Receive) -> dict[str, Any]:
        """The whole body as one message (or the disconnect that ended it)."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return dict(message)  # http.disconnect: the application sees it as sent
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                raise BodyTooLarge(self.limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
