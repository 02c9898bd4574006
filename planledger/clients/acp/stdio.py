"""asyncio streams on this process's stdin/stdout, whatever they are: pipes and sockets (an
editor) are read and written by the event loop; regular files (`< in.jsonl > out.jsonl`), which
the loop cannot watch, by a reader thread and plain blocking writes.

The ACP SDK's connection takes an `asyncio.StreamWriter` (it checks). A writer's `drain()`
waits on its protocol's flow control: stdout's protocol is an `asyncio.StreamReaderProtocol`,
as `asyncio.open_connection` makes for a socket, whose reader side goes unused. So `drain()`
waits while the pipe is full (the transport pauses and resumes the protocol) and raises once
the pipe is gone.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import IO, Any

LINE_LIMIT = 64 * 1024 * 1024


def watchable(stream: IO[Any]) -> bool:
    """Whether the event loop can watch `stream` (a pipe, socket or character device)."""
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class FileTransport(asyncio.WriteTransport):
    """Blocking writes to a file (each JSON-RPC line is flushed at once)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self.stream = stream
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.closing:
            self.stream.write(data)
            self.stream.flush()

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


def feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    def read() -> None:
        try:
            while line := sys.stdin.buffer.readline():
                loop.call_soon_threadsafe(reader.feed_data, line)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=read, name="acp-stdin", daemon=True).start()


async def stdio_streams(
    limit: int = LINE_LIMIT,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A reader of stdin and a writer to stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    if watchable(sys.stdin):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        feed_from_thread(loop, reader)
    flow = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop)
    transport: asyncio.WriteTransport
    if watchable(sys.stdout):
        transport, _ = await loop.connect_write_pipe(lambda: flow, sys.stdout)
    else:
        transport = FileTransport(sys.stdout.buffer)
    return reader, asyncio.StreamWriter(transport, flow, None, loop)
