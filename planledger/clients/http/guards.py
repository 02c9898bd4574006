"""ASGI guards in front of every route: the bearer token and the body size cap."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from planledger.clients.http.errors import BodyTooLarge, too_large, unauthorized

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/healthz"})
TOKEN_COOKIE = "planledger_token"


class TokenGuard:
    """With a token, every path but /healthz needs `Authorization: Bearer <token>` (compared in
    constant time). A browser may instead open a page once with `?token=...`: the page then
    keeps it in a cookie, which is accepted too."""

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
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            candidates += query.get("token", [])[:1]
        return any(hmac.compare_digest(c.encode(), self.token) for c in candidates)


class BodyLimit:
    """Refuse request bodies over `limit` bytes (413), declared or streamed."""

    def __init__(self, app: App, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def limited_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        try:
            await self.app(scope, limited_receive, send)
        except BodyTooLarge:
            await too_large(self.limit)(scope, receive, send)
