"""Finding transcript files and reading their lines cheaply, a block of lines at a time.

Only a line holding one of the reader's markers can hold a plan call, so only those are parsed
as JSON; every other line gets a structural check (an object: `{` ... `}`), and only a line that
fails it is parsed, to report it. A cut or garbled line is therefore found wherever it is; a
damaged line that still starts with `{` and ends with `}` and holds no marker is not (it cannot
hold a plan call either).

Whatever a line holds, it costs a bounded amount: a line nested too deep to parse is reported,
and a line past MAX_LINE_BYTES is never held whole, only scanned for markers and its shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from planledger.importers.report import Errors, LineError

MAX_LINE_BYTES = 16 << 20  # a longer line is not parsed: no plan call or answer is that long
CHUNK_BYTES = 1 << 20  # what is held of a longer line at a time
BLOCK_BYTES = 1 << 18  # what is read at a time (a block, and the start of a line it cuts)


def find_files(
    paths: Sequence[Path], errors: Errors, patterns: Sequence[str] = ("*.jsonl",)
) -> list[Path]:
    """Each PATH that is a file, and every file matching one of `patterns` under each PATH
    that is a folder (recursively, sorted); each file once, in the order given."""
    found: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            candidates = sorted(
                {p for pattern in patterns for p in path.rglob(pattern) if p.is_file()}
            )
        elif path.is_file():
            candidates = [path]
        else:
            errors.append(LineError(path=str(path), line=0, message="no such file or folder"))
            continue
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return found


def describe(error: ValueError | RecursionError) -> str:
    """Why a text is not JSON that can be read."""
    if isinstance(error, RecursionError):
        return "JSON nested too deep to read"
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON: {error.msg} at column {error.colno}"
    return f"not JSON: {error}"


@dataclass(frozen=True)
class LongLine:
    """What is known of a line past MAX_LINE_BYTES: its size, whether it holds a marker, and
    whether it has the shape of an object."""

    size: int
    marked: bool
    object_like: bool


def records(
    path: Path,
    markers: tuple[bytes, ...],
    errors: Errors,
    advance: Callable[[int], None],
) -> Iterator[tuple[int, Any]]:
    """(1-based line number, parsed JSON) of each line holding a marker; unreadable lines are
    added to `errors`; `advance(n)` is told of every n bytes read.

    The file is read BLOCK_BYTES at a time. A block of well-formed lines (`{...}` each, the
    common case) is checked whole: its markers found with `bytes.find`, its lines' shape by
    counting `}\n{` against its newlines; any other block is read line by line."""
    try:
        handle = path.open("rb")
    except OSError as error:
        errors.append(LineError(path=str(path), line=0, message=f"cannot read: {error.strerror}"))
        return

    def report(number: int, message: str) -> None:
        errors.append(LineError(path=str(path), line=number, message=message))

    with handle:
        yield from _blocks(handle, markers, report, advance)


def _blocks(
    handle: BinaryIO,
    markers: tuple[bytes, ...],
    report: Callable[[int, str], None],
    advance: Callable[[int], None],
) -> Iterator[tuple[int, Any]]:
    limit = MAX_LINE_BYTES
    number = 0  # lines before `data`
    pending = b""  # the start of a line the blocks read so far have not ended
    while block := handle.read(BLOCK_BYTES):
        advance(len(block))
        data = pending + block if pending else block
        end = data.rfind(b"\n") + 1
        pending = data[end:]
        if end:
            number += yield from _complete(data, end, number, markers, limit, report)
        if len(pending) >= limit:  # a long line: the rest scanned a chunk at a time
            number += 1
            long = _scan_rest(handle, pending, markers)
            advance(long.size - len(pending))
            if long.marked or not long.object_like:
                report(number, f"line of {long.size:,} bytes, too long to read")
            pending = b""
    if pending:
        yield from _line(pending, number + 1, markers, limit, report)


def _complete(
    data: bytes,
    end: int,
    number: int,
    markers: tuple[bytes, ...],
    limit: int,
    report: Callable[[int, str], None],
) -> Generator[tuple[int, Any], None, int]:
    """The marked lines of `data[:end]` (whole lines), the first being line `number + 1`;
    returns how many lines it holds (counted once: the newlines before each marked line, then
    the rest)."""
    if end <= limit:
        starts: set[int] = set()
        for marker in markers:
            found = data.find(marker, 0, end)
            while found >= 0:
                starts.add(data.rfind(b"\n", 0, found) + 1)
                found = data.find(marker, data.index(b"\n", found), end)
        marked = sorted(starts)
        before: list[int] = []  # the newlines before each marked line
        seen = counted = 0  # the newlines of data[:counted]
        for start in marked:
            seen += data.count(b"\n", counted, start)
            counted = start
            before.append(seen)
        lines = seen + data.count(b"\n", counted, end)
        if _well_formed(data, end, lines):
            for start, newlines in zip(marked, before, strict=True):
                line = data[start : data.index(b"\n", start) + 1]
                try:
                    yield number + newlines + 1, json.loads(line)
                except (ValueError, RecursionError) as error:
                    report(number + newlines + 1, describe(error))
            return lines
    lines = start = 0
    while start < end:
        stop = data.index(b"\n", start) + 1
        lines += 1
        yield from _line(data[start:stop], number + lines, markers, limit, report)
        start = stop
    return lines


def _well_formed(data: bytes, end: int, lines: int) -> bool:
    """Whether each of the `lines` lines of `data[:end]` is `{...}` (no blank line, no
    padding)."""
    return (
        data.startswith(b"{")
        and data[end - 2 : end] == b"}\n"
        and data.count(b"}\n{", 0, end) == lines - 1
    )


def _line(
    line: bytes,
    number: int,
    markers: tuple[bytes, ...],
    limit: int,
    report: Callable[[int, str], None],
) -> Iterator[tuple[int, Any]]:
    """One line read on its own: parsed when marked, else only checked for its shape."""
    stripped = line.strip()
    if len(line.removesuffix(b"\n")) >= limit:
        if any(marker in line for marker in markers) or not (
            stripped[:1] == b"{" and stripped[-1:] == b"}"
        ):
            report(number, f"line of {len(line):,} bytes, too long to read")
    elif any(marker in line for marker in markers):
        try:
            yield number, json.loads(line)
        except (ValueError, RecursionError) as error:
            report(number, describe(error))
    elif stripped and (stripped[:1] != b"{" or stripped[-1:] != b"}"):
        try:
            json.loads(stripped)
        except (ValueError, RecursionError) as error:
            report(number, describe(error))


def _scan_rest(handle: BinaryIO, start: bytes, markers: tuple[bytes, ...]) -> LongLine:
    """Read the rest of a long line a chunk at a time (a marker may straddle two chunks)."""
    keep = max(len(marker) for marker in markers) - 1
    size, marked, first, last, tail = 0, False, b"", b"", b""
    chunk = start
    while chunk:
        size += len(chunk)
        window = tail + chunk
        marked = marked or any(marker in window for marker in markers)
        first = first or chunk.lstrip()[:1]
        last = chunk.rstrip()[-1:] or last
        tail = window[-keep:] if keep else b""
        if chunk.endswith(b"\n"):
            break
        chunk = handle.readline(CHUNK_BYTES)
    return LongLine(size=size, marked=marked, object_like=(first, last) == (b"{", b"}"))
