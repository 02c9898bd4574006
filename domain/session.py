"""The Session aggregate: the user-controlled collaboration mode and the session's goals.

Goals live inside their session: every goal event names its `goal_id`, and a plan's
`goal_id` is checked against the goals of the same session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.base import Aggregate, Created, Event
from domain.errors import (
    CorruptHistory,
    GoalExists,
    GoalNotFound,
    IllegalTransition,
)
from domain.field_types import TEXT, TEXT_OR_NONE, FieldTypes, check_stamp, field_types
from domain.session_fields import GOAL_EDGES, NO_ORIGIN, Goal, GoalState, Mode, Origin


class Session(Aggregate):
    # Class defaults: a snapshot taken before sessions had an origin restores without one.
    source: str | None = None
    parent_session_id: str | None = None
    cwd: str | None = None

    def __init__(
        self,
        session_id: str,
        mode: str,
        source: str | None = None,
        parent_session_id: str | None = None,
        cwd: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.mode = Mode(mode)
        self.goals: dict[str, Goal] = {}
        self.source = source
        self.parent_session_id = parent_session_id
        self.cwd = cwd

    @dataclass(frozen=True)
    class SessionOpened(Created):
        session_id: str
        mode: str
        source: str | None = None
        parent_session_id: str | None = None
        cwd: str | None = None

        def mutate(self, aggregate: Any) -> Any:
            check_session_event(self)
            return super().mutate(aggregate)

    @dataclass(frozen=True)
    class SessionEvent(Event):
        """A session event after its opening, its fields checked before it applies."""

        def mutate(self, aggregate: Any) -> Any:
            check_session_event(self)
            return super().mutate(aggregate)

    @dataclass(frozen=True)
    class CollaborationModeChanged(SessionEvent):
        mode: str

        def apply(self, aggregate: Session) -> None:
            aggregate.mode = Mode(self.mode)

    @dataclass(frozen=True)
    class GoalStarted(SessionEvent):
        goal_id: str
        objective: str

        def apply(self, aggregate: Session) -> None:
            if self.goal_id in aggregate.goals:
                raise CorruptHistory(
                    aggregate.session_id,
                    self.originator_version,
                    "goal_restarted",
                    f"goal {self.goal_id!r} was started twice",
                )
            aggregate.goals[self.goal_id] = Goal(
                goal_id=self.goal_id, objective=self.objective, state=GoalState.ACTIVE
            )

    @dataclass(frozen=True)
    class GoalTransitioned(SessionEvent):
        """Base of the goal lifecycle events; `edge` names the transition."""

        goal_id: str

        edge = ""

        def apply(self, aggregate: Session) -> None:
            goal = aggregate.goals.get(self.goal_id)
            sources, target = GOAL_EDGES[self.edge]
            if goal is None or goal.state not in sources:
                raise CorruptHistory(
                    aggregate.session_id,
                    self.originator_version,
                    "illegal_goal_transition",
                    f"goal {self.goal_id!r} cannot {self.edge} from "
                    f"{goal.state if goal else 'nothing'}",
                )
            aggregate.goals[self.goal_id] = goal.model_copy(update={"state": target})

    @dataclass(frozen=True)
    class GoalBlocked(GoalTransitioned):
        edge = "block"

    @dataclass(frozen=True)
    class GoalResumed(GoalTransitioned):
        edge = "resume"

    @dataclass(frozen=True)
    class GoalCompleted(GoalTransitioned):
        edge = "complete"

    @dataclass(frozen=True)
    class GoalCancelled(GoalTransitioned):
        edge = "cancel"

    @classmethod
    def open(
        cls, aggregate_id: str, session_id: str, mode: Mode, origin: Origin = NO_ORIGIN
    ) -> Session:
        return cls._create(
            cls.SessionOpened,
            id=aggregate_id,
            session_id=session_id,
            mode=mode.value,
            source=origin.source,
            parent_session_id=origin.parent_session_id,
            cwd=origin.cwd,
        )

    def change_mode(self, mode: Mode) -> None:
        """Only the user's explicit command calls this; plan updates never do."""
        if mode != self.mode:
            self.trigger_event(self.CollaborationModeChanged, mode=mode.value)

    def start_goal(self, goal_id: str, objective: str) -> None:
        if goal_id in self.goals:
            raise GoalExists(self.session_id, goal_id)
        self.trigger_event(self.GoalStarted, goal_id=goal_id, objective=objective)

    def move_goal(self, goal_id: str, edge: str) -> None:
        goal = self.goals.get(goal_id)
        if goal is None:
            raise GoalNotFound(self.session_id, goal_id)
        if edge not in GOAL_EDGES:
            raise IllegalTransition(f"goals cannot {edge!r}; use {', '.join(GOAL_EDGES)}")
        sources, _ = GOAL_EDGES[edge]
        if goal.state not in sources:
            allowed = " or ".join(sorted(sources))
            raise IllegalTransition(
                f"goal {goal_id!r} is {goal.state}; it can {edge} only when {allowed}"
            )
        self.trigger_event(EDGE_EVENTS[edge], goal_id=goal_id)

    @property
    def should_continue(self) -> bool:
        """True exactly when the session has an active goal; a plan never makes it true."""
        return any(goal.state == GoalState.ACTIVE for goal in self.goals.values())


EDGE_EVENTS: dict[str, type[Session.GoalTransitioned]] = {
    "block": Session.GoalBlocked,
    "resume": Session.GoalResumed,
    "complete": Session.GoalCompleted,
    "cancel": Session.GoalCancelled,
}


# The types the ledger writes each field of a session event with (the timestamp aside).
SESSION_EVENT_TYPES: dict[type[Event], FieldTypes] = {
    Session.SessionOpened: field_types(
        "opening",
        session_id=TEXT,
        mode=TEXT,
        source=TEXT_OR_NONE,
        parent_session_id=TEXT_OR_NONE,
        cwd=TEXT_OR_NONE,
    ),
    Session.CollaborationModeChanged: field_types("mode change", mode=TEXT),
    Session.GoalStarted: field_types("goal start", goal_id=TEXT, objective=TEXT),
}
GOAL_CHANGE_TYPES = field_types("goal change", goal_id=TEXT)


def check_session_event(event: Event) -> None:
    """Raise CorruptHistory (unreadable_event) unless the event's timestamp and fields are of
    the types the ledger writes them with (an edited row may hold others, or lack one)."""
    session_id = str(event.originator_id).removeprefix("session:")
    position = event.originator_version
    check_stamp(session_id, position, getattr(event, "timestamp", None))
    types = SESSION_EVENT_TYPES.get(type(event))
    if types is None and isinstance(event, Session.GoalTransitioned):
        types = GOAL_CHANGE_TYPES
    if types is not None:
        values = [getattr(event, name, None) for name in types.names]
        types.check(session_id, position, *values)
