"""Input limits, checked before any work that grows with the input.

A payload nested too deep, holding an integer too large to print, or holding values that are not
JSON data (NaN and the infinities included) cannot be read, fingerprinted or stored: it is refused
as invalid input and nothing is recorded. Texts that are merely too long are a rule (`too_long`):
the recorded candidate keeps them cut at twice their bound, so the rule still fires and a hostile
payload cannot bloat the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from domain.errors import InvalidPayload, NotJson

MAX_DEPTH = 16  # objects and lists nested in one another; a proposal needs 3
MAX_INTEGER = 10**100 - 1  # 100 digits: far past any revision, cheap to print and compare
MAX_PAYLOAD_BYTES = 1024 * 1024  # what an interface reads as one proposal, at most
MAX_STATUS_CHARS = 32  # longer than any status: bounded like a text, still invalid
MAX_GOAL_ID_CHARS = 128  # the id bound: a longer goal_id names no goal
MAX_EXPLANATION_CHARS = 4000  # kept for the audit; longer ones are cut (no rule bounds it)
MAX_REPORTED = 10  # of one kind of shape problem in one object; the rest are counted
CUT_MARK = "…"


def check_payload(payload: object) -> None:
    """Raise InvalidPayload unless `payload` is JSON data within MAX_DEPTH and MAX_INTEGER
    (NotJson for a NaN or an infinity, which JSON does not have).

    Iterative, one nesting level at a time (a deep payload cannot exhaust the stack), and stops
    at the first problem. Exact JSON types are told by `type` first: ABC checks cost 10x."""
    level: list[Any] = [payload]
    depth = 0
    while level:
        depth += 1
        inner: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is str or kind is bool or value is None:
                continue
            if kind is float:
                _check_float(value)
            elif kind is int:
                _check_integer(value)
            elif kind is dict or kind is list or isinstance(value, Mapping | list | tuple):
                if depth > MAX_DEPTH:
                    raise InvalidPayload(
                        f"the proposal nests objects or lists more than {MAX_DEPTH} deep; "
                        "a plan needs 3 (proposal, steps, step)"
                    )
                if kind is dict or (kind is not list and isinstance(value, Mapping)):
                    for key in value:
                        if type(key) is not str and not isinstance(key, str):
                            raise InvalidPayload("every field name of a proposal must be a string")
                    inner.extend(value.values())
                else:
                    inner.extend(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                _check_integer(value)
            elif isinstance(value, float):
                _check_float(value)
            elif not isinstance(value, str | bool):
                raise InvalidPayload(
                    f"the proposal holds a {type(value).__name__}; send JSON data only"
                )
        level = inner


def _check_integer(value: int) -> None:
    if abs(value) > MAX_INTEGER:
        raise InvalidPayload("the proposal holds an integer of more than 100 digits")


def _check_float(value: float) -> None:
    if not math.isfinite(value):
        name = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        raise NotJson(
            f"the proposal holds {name} (or a number past a double's range), which is not JSON"
        )


def cut(text: str, keep: int) -> str:
    """`text`, or its first `keep` characters and CUT_MARK."""
    return text if len(text) <= keep else text[:keep] + CUT_MARK


def bounded(text: str, limit: int) -> str:
    """A text a rule bounds by `limit`, as the candidate keeps it: as sent up to twice the limit
    (a near miss is reported on the very text), else cut there. Still over the limit, so the
    rule still fires, and never more than `2 * limit + 1` characters are stored."""
    return cut(text, 2 * limit)
