"""What a session holds besides its events: the collaboration mode, goals and their lifecycle,
and where the session comes from (light to import: readers and the CLI's parser need these
without the event classes of domain.session)."""

from __future__ import annotations

from enum import StrEnum

from domain.errors import InvalidInput
from domain.ids import validate_id
from domain.models import Frozen

MAX_SOURCE_CHARS = 64
MAX_CWD_CHARS = 4096


class Mode(StrEnum):
    WORK = "work"
    PLAN = "plan"


class GoalState(StrEnum):
    ACTIVE = "active"
    BLOCKED = "blocked"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


# The goal lifecycle: active -> completed | cancelled; active <-> blocked; blocked -> cancelled.
# Each edge: the states it leaves from, and the state it reaches.
GOAL_EDGES: dict[str, tuple[frozenset[GoalState], GoalState]] = {
    "block": (frozenset({GoalState.ACTIVE}), GoalState.BLOCKED),
    "resume": (frozenset({GoalState.BLOCKED}), GoalState.ACTIVE),
    "complete": (frozenset({GoalState.ACTIVE}), GoalState.COMPLETED),
    "cancel": (frozenset({GoalState.ACTIVE, GoalState.BLOCKED}), GoalState.CANCELLED),
}


class Goal(Frozen):
    goal_id: str
    objective: str
    state: GoalState


class Origin(Frozen):
    """Where a session comes from: the client or importer that opened it (`claude-code`,
    `import:codex`, `mcp`, ...), the session it was forked from or is a subagent of, and the
    working directory of the agent. Each is None when unknown."""

    source: str | None = None
    parent_session_id: str | None = None
    cwd: str | None = None

    @classmethod
    def checked(
        cls, source: str | None = None, parent_session_id: str | None = None, cwd: str | None = None
    ) -> Origin:
        """An origin whose fields are plain, bounded text (InvalidInput otherwise)."""
        if source is not None and not (
            0 < len(source) <= MAX_SOURCE_CHARS and source.isprintable()
        ):
            raise InvalidInput(f"a session source is 1-{MAX_SOURCE_CHARS} printable characters")
        if parent_session_id is not None:
            validate_id(parent_session_id, "parent session id")
        if cwd is not None and plain_cwd(cwd) is None:
            raise InvalidInput(f"a working directory is 1-{MAX_CWD_CHARS} printable characters")
        return cls(source=source, parent_session_id=parent_session_id, cwd=cwd)


NO_ORIGIN = Origin()


def plain_cwd(value: object) -> str | None:
    """`value` when it is a working directory a session can hold (plain text, bounded), else
    None: an agent's odd path is left out, never a reason to refuse its plan."""
    if isinstance(value, str) and 0 < len(value) <= MAX_CWD_CHARS and value.isprintable():
        return value
    return None
