"""Finding transcript files and reading their lines cheaply.

Only a line holding one of the reader's markers can hold a plan call, so only those are parsed
as JSON; every other line gets a structural check (an object: `{` ... `}`), and only a line that
fails it is parsed, to report it. A cut or garbled line is therefore found wherever it is; a
damaged line that still starts with `{` and ends with `}` and holds no marker is not (it cannot
hold a plan call either).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from planledger.importers.report import LineError

PROGRESS_EVERY = 1 << 20  # bytes between two progress reports


def find_files(paths: Sequence[Path], errors: list[LineError]) -> list[Path]:
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


def describe(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON: {error.msg} at column {error.colno}"
    return f"not JSON: {error}"


def records(
    path: Path,
    markers: tuple[bytes, ...],
    errors: list[LineError],
    advance: Callable[[int], None],
) -> Iterator[tuple[int, Any]]:
    """(1-based line number, parsed JSON) of each line holding a marker; unreadable lines are
    added to `errors`; `advance(n)` is told of every n bytes read."""
    try:
        handle = path.open("rb")
    except OSError as error:
        errors.append(LineError(path=str(path), line=0, message=f"cannot read: {error.strerror}"))
        return
    unreported = 0
    with handle:
        for number, line in enumerate(handle, 1):
            unreported += len(line)
            if unreported >= PROGRESS_EVERY:
                advance(unreported)
                unreported = 0
            if any(marker in line for marker in markers):
                try:
                    yield number, json.loads(line)
                except ValueError as error:
                    errors.append(LineError(path=str(path), line=number, message=describe(error)))
                continue
            stripped = line.strip()
            if stripped and (stripped[:1] != b"{" or stripped[-1:] != b"}"):
                try:
                    json.loads(stripped)
                except ValueError as error:
                    errors.append(LineError(path=str(path), line=number, message=describe(error)))
    advance(unreported)
