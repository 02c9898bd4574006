"""`planledger mcp` over stdio: the SDK's transport, except that a line that is not a JSON-RPC
message gets the JSON-RPC 2.0 error it calls for (-32700 for text that is not JSON, -32600 for
JSON that is not a message) and the server reads on. The SDK's transport hands such a line on as
an exception, which its dispatcher only logs at debug level, leaving the client without answer."""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

Incoming = SessionMessage | Exception


class Messages(Protocol):
    """What the transport reads: each line's message, or the exception its parse raised."""

    async def receive(self) -> Incoming: ...

    async def aclose(self) -> None: ...


class Replies(Protocol):
    """Where the transport writes."""

    async def send(self, message: SessionMessage, /) -> None: ...


def error_reply(error: Exception) -> types.JSONRPCError:
    """The JSON-RPC error answering a line that failed to parse as a message (its id is null:
    JSON-RPC 2.0 asks for null when a parse error or an invalid request hides it)."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    not_json = not problems or any(problem["type"] == "json_invalid" for problem in problems)
    code, message = (
        (types.PARSE_ERROR, "Parse error")
        if not_json
        else (types.INVALID_REQUEST, "Invalid Request")
    )
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )


class AnsweringBadLines:
    """The transport's read stream without its parse failures: each is answered on `replies`."""

    def __init__(self, inner: Messages, replies: Replies) -> None:
        self.inner = inner
        self.replies = replies

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message (the SDK's loop reads it from its stream)."""
        context: contextvars.Context | None = getattr(self.inner, "last_context", None)
        return context

    async def receive(self) -> Incoming:
        item = await self.inner.receive()
        while isinstance(item, Exception):
            await self.replies.send(SessionMessage(error_reply(item)))
            item = await self.inner.receive()
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> AnsweringBadLines:
        return self

    async def __anext__(self) -> Incoming:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringBadLines:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def run_stdio(server: Server[Any]) -> None:
    """Serve `server` on stdin/stdout as the SDK's stdio transport does, with bad lines
    answered."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(
            AnsweringBadLines(read_stream, write_stream),
            write_stream,
            server.create_initialization_options(),
        )
