"""Reading a proposal from a file or standard input, refusing what cannot be a plan."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from domain.errors import InvalidInput
from domain.limits import MAX_PAYLOAD_BYTES


def read_payload(source: str) -> Any:
    """The JSON in FILE or on standard input (`-`). Input past MAX_PAYLOAD_BYTES, JSON that
    cannot be read (nested too deep, an integer too long), or what JSON does not have (NaN,
    Infinity, a number past a double's range, all of which Python's parser accepts) is invalid
    input (exit 2): refused before anything is recorded, never a crash."""
    where = "standard input" if source == "-" else source
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        else:
            with Path(source).open("rb") as file:
                data = file.read(MAX_PAYLOAD_BYTES + 1)
        if len(data) > MAX_PAYLOAD_BYTES:
            raise InvalidInput(
                f"{where} is larger than {MAX_PAYLOAD_BYTES} bytes; a plan is at most "
                "100 short steps"
            )
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput(f"cannot read {source!r}: {error}") from None
    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise InvalidInput(f"{where} nests objects or lists too deep to read") from None
    except ValueError as error:  # JSONDecodeError, or an integer past Python's digit limit
        reason = str(error).split(";")[0]
        raise InvalidInput(f"{where} is not JSON a plan can hold: {reason}") from None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is past the range of a number")
    return value
