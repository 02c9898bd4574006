"""Errors the domain raises; interfaces turn each into an exit code or status."""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class ErrorKind(StrEnum):
    """What went wrong, as every client needs to know it: each maps a kind to its own code once
    (an exit code, an HTTP status, an MCP tool error, a JSON-RPC error)."""

    NOT_FOUND = "not_found"
    EXISTS = "exists"
    INVALID = "invalid"
    REJECTED = "rejected"
    CONFLICT = "conflict"
    CORRUPT = "corrupt"
    UNAVAILABLE = "unavailable"


class LedgerError(Exception):
    """Base of every error a user can cause or see."""

    kind: ClassVar[ErrorKind] = ErrorKind.INVALID
    code: ClassVar[str] = "invalid_input"

    @property
    def message(self) -> str:
        return str(self)


class InvalidId(LedgerError):
    code = "invalid_id"


class InvalidInput(LedgerError):
    """The input could not be read as a proposal at all (not a JSON object, not JSON)."""


class InvalidPayload(LedgerError):
    """A payload that cannot be read as a proposal at all: nested too deep, an integer too large,
    values that are not JSON data. Nothing is recorded."""

    code = "invalid_input"


class NotJson(InvalidPayload):
    """A value JSON does not have (NaN, Infinity, a number past a double's range), which a
    lenient parser let through: the input is not JSON. Nothing is recorded."""

    code = "invalid_json"


class SessionNotFound(LedgerError):
    kind = ErrorKind.NOT_FOUND
    code = "session_not_found"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session_not_found: no session {session_id!r}; open it first")
        self.session_id = session_id


class SessionExists(LedgerError):
    kind = ErrorKind.EXISTS
    code = "session_exists"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class GoalNotFound(LedgerError):
    kind = ErrorKind.NOT_FOUND
    code = "goal_not_found"

    def __init__(self, session_id: str, goal_id: str) -> None:
        super().__init__(f"session {session_id!r} has no goal {goal_id!r}")


class GoalExists(LedgerError):
    kind = ErrorKind.EXISTS
    code = "goal_exists"

    def __init__(self, session_id: str, goal_id: str) -> None:
        super().__init__(f"session {session_id!r} already has a goal {goal_id!r}")


class IllegalTransition(LedgerError):
    """A goal asked to move along an edge its lifecycle does not have."""

    kind = ErrorKind.REJECTED
    code = "illegal_transition"


class ProposalNotFound(LedgerError):
    kind = ErrorKind.NOT_FOUND
    code = "proposal_not_found"


class TokenNotFound(LedgerError):
    kind = ErrorKind.NOT_FOUND
    code = "token_not_found"


class TokenExists(LedgerError):
    kind = ErrorKind.EXISTS
    code = "token_exists"


class CheckpointNotFound(LedgerError):
    kind = ErrorKind.NOT_FOUND
    code = "checkpoint_not_found"


class RevisionNotFound(LedgerError):
    kind = ErrorKind.NOT_FOUND
    code = "revision_not_found"


class StorageUnavailable(LedgerError):
    """The database cannot be used right now (unreachable, locked, disk full): retry later."""

    kind = ErrorKind.UNAVAILABLE
    code = "storage_unavailable"


class ReadOnlyStore(LedgerError):
    """This process may read the database but not write it (a read-only role, a standby
    server, a read-only file): nothing was recorded."""

    kind = ErrorKind.UNAVAILABLE
    code = "read_only_store"


class CorruptHistory(LedgerError):
    """A stored history breaks a rule; raised on replay, never silently accepted."""

    kind = ErrorKind.CORRUPT
    code = "corrupt_history"

    def __init__(self, session_id: str, position: int, rule: str, message: str) -> None:
        super().__init__(
            f"corrupt history in session {session_id!r} at event {position}: [{rule}] {message}"
        )
        self.session_id = session_id
        self.position = position
        self.rule = rule
        self.detail = message


def error_line(error: BaseException, limit: int = 300) -> str:
    """`Type: first line of its message` (the type alone for an error without one)."""
    first = (str(error).strip().splitlines() or [""])[0][:limit]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
