"""asyncio streams on this process's stdin/stdout, whatever they are: pipes and sockets (an
editor) are read and written by the event loop; regular files (`< in.jsonl > out.jsonl`), which
the loop cannot watch, by a reader thread and plain blocking writes."""

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


class _FlowControl(asyncio.streams.FlowControlMixin):
    """The protocol a StreamWriter needs for `drain()`."""


class _FileTransport(asyncio.WriteTransport):
    """Blocking writes to a file (each JSON-RPC line is flushed at once)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self._stream = stream
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._stream.write(data)
            self._stream.flush()

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
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
        _feed_from_thread(loop, reader)
    protocol = _FlowControl(loop)
    if watchable(sys.stdout):
        transport, _ = await loop.connect_write_pipe(lambda: protocol, sys.stdout)
    else:
        transport = _FileTransport(sys.stdout.buffer)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
