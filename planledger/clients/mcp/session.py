"""Which ledger session a tool call writes to: the call's, else `--session`, else one of our own."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from domain.errors import SessionExists
from planledger.service import PlanLedger


class BadArgument(ValueError):
    """A tool argument of the wrong type or value, named by a violation code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def new_session_id(now: datetime | None = None) -> str:
    """`mcp-<UTC yyyymmddThhmmss>-<6 hex>`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"mcp-{moment:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def start_session(service: PlanLedger, requested: str | None) -> str:
    """The server's default session: `requested` (opened if missing), else a new one."""
    session_id = requested or new_session_id()
    try:
        service.open_session(session_id, source="mcp")
    except SessionExists:
        if requested is None:  # a clash of two fresh names: astronomically unlikely, try again
            return start_session(service, None)
    return session_id


def session_of(arguments: Mapping[str, Any], default: str) -> str:
    """The call's `session_id` if it gives one (its existence is the service's to check)."""
    value = arguments.get("session_id")
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadArgument(
            "invalid_field",
            "`session_id` must be a string naming an open session, or left out to use this "
            "server's session.",
        )
    return value
