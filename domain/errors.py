"""Errors the domain raises; interfaces turn each into an exit code or status."""

from __future__ import annotations


class LedgerError(Exception):
    """Base of every error a user can cause or see."""


class InvalidId(LedgerError):
    pass


class SessionNotFound(LedgerError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session_not_found: no session {session_id!r}; open it first")
        self.session_id = session_id


class SessionExists(LedgerError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class GoalNotFound(LedgerError):
    def __init__(self, session_id: str, goal_id: str) -> None:
        super().__init__(f"session {session_id!r} has no goal {goal_id!r}")


class GoalExists(LedgerError):
    def __init__(self, session_id: str, goal_id: str) -> None:
        super().__init__(f"session {session_id!r} already has a goal {goal_id!r}")


class IllegalTransition(LedgerError):
    """A goal asked to move along an edge its lifecycle does not have."""


class ProposalNotFound(LedgerError):
    pass


class RevisionNotFound(LedgerError):
    pass


class CorruptHistory(LedgerError):
    """A stored history breaks a rule; raised on replay, never silently accepted."""

    def __init__(self, session_id: str, position: int, rule: str, message: str) -> None:
        super().__init__(
            f"corrupt history in session {session_id!r} at event {position}: [{rule}] {message}"
        )
        self.session_id = session_id
        self.position = position
        self.rule = rule
        self.detail = message
