"""Aggregate and event base classes for aggregates identified by readable strings.

The library's own `Aggregate` uses UUIDs; ours use ids such as `plan:<session_id>` so
that an auditor reading the events table with SQL sees whose events they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.domain import (
    BaseAggregate,
    CanInitAggregate,
    CanMutateAggregate,
    CanSnapshotAggregate,
    MetaDomainEvent,
    OriginatorVersionError,
)

from domain.errors import CorruptHistory, error_line


@dataclass(frozen=True)
class Event(CanMutateAggregate[str], metaclass=MetaDomainEvent):
    originator_id: str
    originator_version: int
    timestamp: datetime


@dataclass(frozen=True)
class Created(Event, CanInitAggregate[str]):
    originator_topic: str


@dataclass(frozen=True)
class Snapshot(CanSnapshotAggregate[str], metaclass=MetaDomainEvent):
    originator_id: str
    originator_version: int
    timestamp: datetime
    topic: str
    state: dict[str, Any]


class Aggregate(BaseAggregate[str]):
    """Base for Plan and Session: explicit event classes, string ids."""

    Event = Event
    Created = Created
    Snapshot = Snapshot


def replay_event(session_id: str, aggregate: Any, event: Any) -> Any:
    """`event` applied to `aggregate` (None: before its stream's first event) as a replay
    applies it, every failure as the session's CorruptHistory at the event: a rule broken, a
    gap in the stream (missing_event), or an event the aggregate cannot take (unreadable)."""
    try:
        return event.mutate(aggregate)
    except CorruptHistory:
        raise
    except OriginatorVersionError as error:
        raise CorruptHistory(
            session_id, event.originator_version, "missing_event", str(error)
        ) from None
    except Exception as error:  # an edited row decoded to what the aggregate cannot take
        raise CorruptHistory(
            session_id, event.originator_version, "unreadable_event", error_line(error)
        ) from None
