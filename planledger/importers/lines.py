"""Finding transcript files and reading their lines cheaply, one at a time.

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from planledger.importers.report import Errors, LineError

PROGRESS_EVERY = 1 << 20  # bytes between two progress reports
MAX_LINE_BYTES = 16 << 20  # a longer line is not parsed: no plan call or answer is that long
CHUNK_BYTES = 1 << 20  # what is held of a longer line at a time


def find_files(paths: Sequence[Path], errors: Errors) -> list[Path]:
    """Each PATH that is a file, and every `*.jsonl` under each PATH that is a folder
    (recursively, sorted); each file once, in the order given."""
    found: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            candidates = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
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
    added to `errors`; `advance(n)` is told of every n bytes read."""
    try:
        handle = path.open("rb")
    except OSError as error:
        errors.append(LineError(path=str(path), line=0, message=f"cannot read: {error.strerror}"))
        return

    def report(number: int, message: str) -> None:
        errors.append(LineError(path=str(path), line=number, message=message))

    unreported = 0
    with handle:
        for number, line in enumerate(_lines(handle, markers), 1):
            unreported += line.size if isinstance(line, LongLine) else len(line)
            if unreported >= PROGRESS_EVERY:
                advance(unreported)
                unreported = 0
            if isinstance(line, LongLine):
                if line.marked or not line.object_like:
                    report(number, f"line of {line.size:,} bytes, too long to read")
            elif any(marker in line for marker in markers):
                try:
                    yield number, json.loads(line)
                except (ValueError, RecursionError) as error:
                    report(number, describe(error))
            else:
                stripped = line.strip()
                if stripped and (stripped[:1] != b"{" or stripped[-1:] != b"}"):
                    try:
                        json.loads(stripped)
                    except (ValueError, RecursionError) as error:
                        report(number, describe(error))
    advance(unreported)


def _lines(handle: BinaryIO, markers: tuple[bytes, ...]) -> Iterator[bytes | LongLine]:
    """Each line of `handle`, or what is known of it when it is past MAX_LINE_BYTES."""
    while line := handle.readline(MAX_LINE_BYTES):
        if len(line) < MAX_LINE_BYTES or line.endswith(b"\n"):
            yield line
        else:
            yield _scan_rest(handle, line, markers)


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
