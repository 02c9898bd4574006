"""Identifiers: validation of user-given ids and the aggregate ids derived from them."""

from __future__ import annotations

import re

from domain.errors import InvalidId

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}\Z")


def validate_id(value: str, what: str = "session id") -> str:
    """1-128 characters of A-Za-z0-9._-, not starting with '.'."""
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise InvalidId(
            f"invalid {what} {str(value)[:140]!r}: use 1-128 characters of A-Za-z0-9._- "
            "not starting with '.'"
        )
    return value


def plan_aggregate_id(session_id: str) -> str:
    return f"plan:{session_id}"


def session_aggregate_id(session_id: str) -> str:
    return f"session:{session_id}"
