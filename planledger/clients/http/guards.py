"""ASGI guards in front of every route: the bearer token, the body size cap and read deadline."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from planledger.clients.http.errors import BodyTooLarge, error_response, too_large, unauthorized

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz"})
TOKEN_COOKIE = "planledger_token"
# The web pages that turn `?token=` into a cookie (web.routes.token_handoff): the only paths
# whose query the guard reads a token from.
HANDOFF_PAGE, HANDOFF_PAGES = "/ui", "/ui/sessions/"
BODY_TIMEOUT = 10.0  # seconds to receive a whole request body (a plan is at most 256 KiB)


class TokenGuard:
    """With a token, every path but /healthz needs `Authorization: Bearer <token>` (compared in
    constant time). A browser may instead open a web page once with `?token=...`: the page
    then keeps it in a cookie, which is accepted everywhere. An API URL never carries the
    token (it would end up in logs and histories)."""

    def __init__(self, app: App, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._allowed(scope):
            await self.app(scope, receive, send)
            return
        await unauthorized()(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        assert self.token is not None
        headers = dict(scope.get("headers") or [])
        scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        candidates = []
        if scheme.lower() == "bearer":
            candidates.append(given)
        else:
            cookie = SimpleCookie(headers.get(b"cookie", b"").decode("latin-1"))
            if TOKEN_COOKIE in cookie:
                candidates.append(cookie[TOKEN_COOKIE].value)
            if is_handoff_page(scope["path"]):
                query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
                candidates += query.get("token", [])[:1]
        return any(hmac.compare_digest(c.encode(), self.token) for c in candidates)


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
